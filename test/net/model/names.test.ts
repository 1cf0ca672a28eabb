/** A name the net does not have: an UnknownNameError, typed, with the name probably meant. */

import { Net, NetError, NetRequestError, parseNetText, UnknownNameError } from 'filespooler';
import { hostView } from 'filespooler/net';
import { describe, expect, test } from 'vitest';
import { placeNamed, transitionNamed, unknownName } from '../../../src/net/model/names.js';
import { makeNet } from '../helpers.js';

const NET =
  'places: { inbox: {}, done: {}, failed: {} }\ntransitions:\n' +
  '  work: { in: inbox, out: done, error: failed, run: [cat] }\n';

function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (err) {
    return err;
  }
  throw new Error('expected an error');
}

describe('unknown names', () => {
  test('placeNamed and transitionNamed: the spec, or an UnknownNameError with the name probably meant', () => {
    const { net } = makeNet(NET);
    expect(placeNamed(net.model, 'inbox').name).toBe('inbox');
    expect(transitionNamed(net.model, 'work').name).toBe('work');
    const e = thrown(() => placeNamed(net.model, 'inbx'));
    expect(e).toBeInstanceOf(UnknownNameError);
    expect(e).toBeInstanceOf(NetRequestError);
    expect(e).toBeInstanceOf(NetError);
    expect(e).toMatchObject({
      code: 'ERR_NET_UNKNOWN_NAME',
      kind: 'place',
      given: 'inbx',
      message: 'No place named "inbx" in the net; did you mean "inbox"?',
    });
    expect(thrown(() => transitionNamed(net.model, 'zz'))).toMatchObject({
      kind: 'transition',
      given: 'zz',
      message: 'No transition named "zz" in the net (transitions: work)',
    });
  });

  test('with no close name, the names there are: a long list cut, not a screenful', () => {
    const many = Array.from({ length: 25 }, (_, i) => `p${i}`);
    expect(unknownName('place', 'zzz', many).message).toBe(
      `No place named "zzz" in the net (places: ${many.slice(0, 20).join(', ')} and 5 more)`,
    );
    expect(unknownName('transition', 'zzz', []).message).toBe(
      'No transition named "zzz" in the net (transitions: none)',
    );
  });

  test("the Net facade's requests: each bad name typed by what it was given for", async () => {
    const { net } = makeNet(NET);
    await expect(net.put('inbx', Buffer.from('x'))).rejects.toMatchObject({
      code: 'ERR_NET_UNKNOWN_NAME',
      kind: 'place',
      given: 'inbx',
    });
    expect(thrown(() => net.pause('wokr'))).toMatchObject({
      code: 'ERR_NET_UNKNOWN_NAME',
      kind: 'transition',
      given: 'wokr',
    });
    await expect(net.token('inbox', { key: 'zz' })).rejects.toMatchObject({
      code: 'ERR_NET_UNKNOWN_NAME',
      kind: 'token',
      given: 'zz',
    });
    await expect(net.retry({ keys: ['zz'] })).rejects.toMatchObject({
      code: 'ERR_NET_UNKNOWN_NAME',
      kind: 'token',
      given: 'zz',
    });
    // A --host on a net without hosts: a bad request, not a failure.
    expect(thrown(() => net.tokens('inbox', { host: 'h' }))).toBeInstanceOf(NetRequestError);
  });

  test('hosts: an unknown one is an UnknownNameError; none where one is needed, a NetRequestError', () => {
    const net = new Net(
      parseNetText(
        'hosts: { alpha: {}, beta: {} }\nplaces:\n  a: { host: alpha }\n' +
          '  b: { host: beta }\ntransitions:\n  t: { host: alpha, in: a, out: b }\n',
        '/tmp/net.yaml',
      ),
    );
    expect(thrown(() => hostView(net.model, 'alpah'))).toMatchObject({
      code: 'ERR_NET_UNKNOWN_NAME',
      kind: 'host',
      given: 'alpah',
      message: 'Unknown host "alpah": the net\'s hosts are alpha, beta; did you mean "alpha"?',
    });
    const none = thrown(() => hostView(net.model, undefined));
    expect(none).toBeInstanceOf(NetRequestError);
    expect(none).not.toBeInstanceOf(UnknownNameError);
  });
});
