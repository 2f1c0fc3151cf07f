// Time travel from JavaScript: `minibus serve --clock mock` and its HTTP
// test-control API (POST /minibus/clock/advance?by=...), which returns once
// everything due by the new instant has happened (SEMANTICS W9). Scheduled
// messages, lock ends and renewals, TTL expiry and session locks, each
// exact to the clock.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startMinibus, newClient, receiveN, receiveNone, rejectsWithCode } from "../lib/minibus.mjs";

const second = 1000;
const minute = 60 * second;
const hour = 60 * minute;

let server, client;
before(async () => {
  server = await startMinibus({ clock: "mock:2026-01-01T00:00:00Z" });
  client = await newClient(server);
});
after(async () => {
  await client?.close();
  await server?.stop();
});

test("the clock is the mock's, read and moved over HTTP (W9)", async () => {
  const t0 = await server.now();
  assert.ok(t0.getTime() >= Date.parse("2026-01-01T00:00:00Z"));
  const t1 = await server.advance("90s");
  assert.equal(t1.getTime() - t0.getTime(), 90 * second);
  assert.equal((await server.now()).getTime(), t1.getTime());
});

test("a message scheduled an hour ahead arrives when the clock is moved an hour (S1, W9)", async () => {
  const sender = client.createSender("tt-schedule");
  const receiver = client.createReceiver("tt-schedule");
  const now = await server.now();
  const at = new Date(now.getTime() + hour);
  const [seq] = await sender.scheduleMessages({ body: "wake up" }, at);
  await receiveNone(receiver);
  await server.advance("59m59s");
  await receiveNone(receiver);
  await server.advance("1s");
  const [m] = await receiveN(receiver, 1, 5000);
  assert.equal(m.body, "wake up");
  assert.ok(Number(m.sequenceNumber) > Number(seq), "a new sequence number at activation (S4)");
  assert.equal(m.scheduledEnqueueTimeUtc.getTime(), at.getTime());
  assert.equal(m.enqueuedTimeUtc.getTime(), at.getTime(), "enqueued at the scheduled instant");
  await receiver.completeMessage(m);
  await receiver.close();
  await sender.close();
});

test("a lock ends with the clock: completeMessage then fails with MessageLockLost, and the message comes again (L5, L7, W6)", async () => {
  const sender = client.createSender("tt-lock");
  await sender.sendMessages({ body: "slow worker" });
  const receiver = client.createReceiver("tt-lock");
  const [m] = await receiveN(receiver, 1);
  const now = await server.now();
  assert.equal(m.lockedUntilUtc.getTime(), now.getTime() + 30 * second, "LockDuration PT30S");
  await server.advance("31s");
  await rejectsWithCode(receiver.completeMessage(m), "MessageLockLost");
  const [again] = await receiveN(receiver, 1);
  assert.equal(again.body, "slow worker");
  assert.equal(again.deliveryCount, 1);
  await receiver.completeMessage(again);
  await receiver.close();
  await sender.close();
});

test("renewMessageLock extends the lock by LockDuration from now; the message stays locked (L6, W8)", async () => {
  const sender = client.createSender("tt-lock");
  await sender.sendMessages({ body: "renewed" });
  const receiver = client.createReceiver("tt-lock");
  const [m] = await receiveN(receiver, 1);
  const first = m.lockedUntilUtc.getTime();
  await server.advance("20s");
  const renewed = await receiver.renewMessageLock(m);
  assert.equal(renewed.getTime(), first + 20 * second);
  assert.equal(m.lockedUntilUtc.getTime(), renewed.getTime());
  await server.advance("25s"); // past the first lock's end, before the renewed one
  await receiveNone(receiver);
  await receiver.completeMessage(m);
  await receiver.close();
  await sender.close();
});

test("a message past its time to live is dead-lettered, as the queue asks (T2, D1)", async () => {
  const sender = client.createSender("tt-expire");
  await sender.sendMessages([{ body: "stale" }, { body: "short", timeToLive: 30 * second }]);
  const dlq = client.createReceiver("tt-expire", { subQueueType: "deadLetter" });
  await server.advance("31s");
  const [short] = await receiveN(dlq, 1);
  assert.equal(short.body, "short");
  assert.equal(short.deadLetterReason, "TTLExpiredException");
  await dlq.completeMessage(short);
  await server.advance("10m");
  const [stale] = await receiveN(dlq, 1);
  assert.equal(stale.body, "stale");
  assert.equal(stale.deadLetterReason, "TTLExpiredException");
  await dlq.completeMessage(stale);
  const receiver = client.createReceiver("tt-expire");
  await receiveNone(receiver);
  await receiver.close();
  await dlq.close();
  await sender.close();
});

test("a session's lock is renewed to the clock, and lost when the clock passes it (SS4, W7, W8)", async () => {
  const sender = client.createSender("sessions");
  await sender.sendMessages([{ body: "s1", sessionId: "tt" }, { body: "s2", sessionId: "tt" }]);
  const session = await client.acceptSession("sessions", "tt", { maxAutoLockRenewalDurationInMs: 0 });
  const now = await server.now();
  assert.equal(session.sessionLockedUntilUtc.getTime(), now.getTime() + minute, "LockDuration PT1M");
  await server.advance("40s");
  const renewed = await session.renewSessionLock();
  assert.equal(renewed.getTime(), now.getTime() + 40 * second + minute);
  const [m1, m2] = await receiveN(session, 2);
  await session.completeMessage(m1);
  await server.advance("61s");
  await rejectsWithCode(session.completeMessage(m2), ["SessionLockLost", "MessageLockLost"]);
  await session.close().catch(() => {});
  // Another receiver takes the session and its message.
  const next = await client.acceptSession("sessions", "tt", { maxAutoLockRenewalDurationInMs: 0 });
  const [again] = await receiveN(next, 1);
  assert.equal(again.body, "s2");
  await next.completeMessage(again);
  await next.close();
  await sender.close();
});
