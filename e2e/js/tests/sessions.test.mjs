// The JavaScript SDK's session receivers against `minibus serve`:
// acceptSession with its state and lock, acceptNextSession, and its
// timeout when no session is available (SEMANTICS W7, W8, SS1–SS9).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startMinibus, newClient, receiveN, receiveNone, rejectsWithCode } from "../lib/minibus.mjs";

let server, client;
before(async () => {
  server = await startMinibus();
  client = await newClient(server);
});
after(async () => {
  await client?.close();
  await server?.stop();
});

// No automatic lock renewal: the tests renew by hand.
const noRenew = { maxAutoLockRenewalDurationInMs: 0 };

test("acceptSession: its messages only, state set and read, lock renewed, settled on the link (W7, W8)", async () => {
  const sender = client.createSender("sessions");
  await sender.sendMessages([
    { body: "a1", sessionId: "alpha" },
    { body: "b1", sessionId: "beta" },
    { body: "a2", sessionId: "alpha" },
  ]);
  const alpha = await client.acceptSession("sessions", "alpha", noRenew);
  assert.equal(alpha.sessionId, "alpha");
  assert.ok(alpha.sessionLockedUntilUtc instanceof Date, "com.microsoft:locked-until-utc on the attach (W7)");
  assert.ok(alpha.sessionLockedUntilUtc.getTime() > Date.now(), `locked until ${alpha.sessionLockedUntilUtc.toISOString()}`);

  assert.equal(await alpha.getSessionState(), null, "a state never set is null (W8)");
  await alpha.setSessionState({ step: 2, done: ["a1"] });
  assert.deepEqual(await alpha.getSessionState(), { step: 2, done: ["a1"] });

  const got = await receiveN(alpha, 2);
  assert.deepEqual(got.map((m) => m.body), ["a1", "a2"]);
  for (const m of got) assert.equal(m.sessionId, "alpha");
  await alpha.completeMessage(got[0]);
  await alpha.abandonMessage(got[1]);
  const [again] = await receiveN(alpha, 1);
  assert.equal(again.body, "a2");
  assert.equal(again.deliveryCount, 1);
  await alpha.deferMessage(again);
  const [deferred] = await alpha.receiveDeferredMessages(again.sequenceNumber);
  assert.equal(deferred.body, "a2");
  await alpha.completeMessage(deferred);
  await receiveNone(alpha);

  const before = alpha.sessionLockedUntilUtc.getTime();
  const renewed = await alpha.renewSessionLock();
  assert.ok(renewed instanceof Date);
  assert.ok(renewed.getTime() >= before, `renewed to ${renewed.toISOString()}, was ${new Date(before).toISOString()}`);
  assert.equal(alpha.sessionLockedUntilUtc.getTime(), renewed.getTime());

  // peekMessages on the session: beta's message is not alpha's.
  assert.deepEqual(await alpha.peekMessages(10), []);
  await alpha.close();

  // The session's state outlives its receiver.
  const alphaAgain = await client.acceptSession("sessions", "alpha", noRenew);
  assert.deepEqual(await alphaAgain.getSessionState(), { step: 2, done: ["a1"] });
  await alphaAgain.setSessionState(null);
  await alphaAgain.close();

  const beta = await client.acceptSession("sessions", "beta", { ...noRenew, receiveMode: "receiveAndDelete" });
  const [b] = await receiveN(beta, 1);
  assert.equal(b.body, "b1");
  await beta.close();
  await sender.close();
});

test("a session locked by another receiver cannot be accepted (SS2, W7)", async () => {
  const sender = client.createSender("sessions");
  await sender.sendMessages({ body: "g1", sessionId: "gamma" });
  const first = await client.acceptSession("sessions", "gamma", noRenew);
  await rejectsWithCode(client.acceptSession("sessions", "gamma", noRenew), "SessionCannotBeLocked");
  const [m] = await receiveN(first, 1);
  await first.completeMessage(m);
  await first.close();
  await sender.close();
});

test("acceptNextSession takes each session with messages, then times out within its bound (SS3, W7)", async () => {
  const sender = client.createSender("sessions-next");
  await sender.sendMessages([
    { body: "x1", sessionId: "s-x" },
    { body: "y1", sessionId: "s-y" },
  ]);
  const seen = [];
  for (let i = 0; i < 2; i++) {
    const r = await client.acceptNextSession("sessions-next", noRenew);
    assert.ok(r.sessionLockedUntilUtc instanceof Date);
    const [m] = await receiveN(r, 1);
    assert.equal(m.sessionId, r.sessionId);
    seen.push(r.sessionId);
    await r.completeMessage(m);
    await r.close();
  }
  assert.deepEqual(seen.sort(), ["s-x", "s-y"]);
  await sender.close();

  // No session has messages: with a 2 s operation timeout the SDK sends
  // com.microsoft:timeout of about 2 s (less a jitter) and the server
  // answers com.microsoft:timeout when it runs out (W7): the SDK's
  // ServiceTimeout.
  const quick = await newClient(server, { timeoutInMs: 2000 });
  try {
    const t0 = Date.now();
    const err = await rejectsWithCode(quick.acceptNextSession("sessions-empty", noRenew), "ServiceTimeout", 10_000);
    const took = Date.now() - t0;
    assert.ok(took >= 1500 && took < 4000, `acceptNextSession failed after ${took} ms (${err.code}: ${err.message})`);
  } finally {
    await quick.close();
  }
});

test("a plain receiver on a session queue is refused; a session receiver on a queue without sessions too (W5, W7)", async () => {
  const plain = client.createReceiver("sessions");
  await assert.rejects(plain.receiveMessages(1, { maxWaitTimeInMs: 1000 }), /requires sessions/);
  await plain.close();
  await rejectsWithCode(client.acceptSession("peeklock", "nope", noRenew), "SessionCannotBeLocked");
});
