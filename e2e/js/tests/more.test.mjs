// More of what applications do with the JavaScript SDK, against `minibus
// serve`: large messages, many messages, a disabled queue, a subscription's
// dead-letter queue, a session's streaming receiver, a deferred message
// that is not there (SEMANTICS W1, W4–W8).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import Long from "long";
import { startMinibus, newClient, receiveN, receiveNone, rejectsWithCode, withTimeout } from "../lib/minibus.mjs";

let server, client;
before(async () => {
  server = await startMinibus();
  client = await newClient(server);
});
after(async () => {
  await client?.close();
  await server?.stop();
});

test("messages of 200 KiB and 1.5 MiB cross the wire whole, both ways; the larger spans frames (W1)", async () => {
  // The server's max-frame-size is 1 MiB: the 1.5 MiB message goes as two
  // transfer frames each way.
  const sender = client.createSender("bulk");
  const receiver = client.createReceiver("bulk");
  for (const size of [200 * 1024, 1536 * 1024]) {
    const body = Buffer.alloc(size);
    for (let i = 0; i < size; i++) body[i] = (i * 31 + 7) & 0xff;
    await sender.sendMessages({ body, messageId: `big-${size}` });
    const [m] = await receiveN(receiver, 1);
    assert.equal(m.messageId, `big-${size}`);
    assert.ok(Buffer.isBuffer(m.body));
    assert.equal(m.body.length, size);
    assert.ok(m.body.equals(body), `the ${size}-byte body came back unchanged`);
    await receiver.completeMessage(m);
  }
  await receiver.close();
  await sender.close();
});

test("500 messages in batches of 100, received 100 at a time and completed (W4, W5)", async () => {
  const sender = client.createSender("bulk");
  for (let i = 0; i < 5; i++) {
    const batch = await sender.createMessageBatch();
    for (let j = 0; j < 100; j++) assert.ok(batch.tryAddMessage({ body: i * 100 + j }));
    await sender.sendMessages(batch);
  }
  const receiver = client.createReceiver("bulk");
  const seen = [];
  const deadline = Date.now() + 20_000;
  while (seen.length < 500 && Date.now() < deadline) {
    const got = await receiver.receiveMessages(100, { maxWaitTimeInMs: 2000 });
    for (const m of got) {
      seen.push(m.body);
      await receiver.completeMessage(m);
    }
  }
  assert.deepEqual(seen, Array.from({ length: 500 }, (_, i) => i), "each once, oldest first (L1)");
  await receiveNone(receiver);
  await receiver.close();
  await sender.close();
});

test("a disabled queue refuses senders and receivers with MessagingEntityDisabled (W4, W5)", async () => {
  const sender = client.createSender("disabled");
  await rejectsWithCode(sender.sendMessages({ body: "x" }), "MessagingEntityDisabled");
  await sender.close();
  const receiver = client.createReceiver("disabled");
  await rejectsWithCode(receiver.receiveMessages(1, { maxWaitTimeInMs: 1000 }), "MessagingEntityDisabled");
  await receiver.close();
});

test("a subscription's dead-letter queue (D1, W2)", async () => {
  const sender = client.createSender("events");
  await sender.sendMessages({ body: "to the dlq", subject: "paint", applicationProperties: { color: "red", priority: 1 } });
  const red = client.createReceiver("events", "red");
  const [m] = await receiveN(red, 1);
  await red.deadLetterMessage(m, { deadLetterReason: "r", deadLetterErrorDescription: "d" });
  const dlq = client.createReceiver("events", "red", { subQueueType: "deadLetter" });
  const [dead] = await receiveN(dlq, 1);
  assert.equal(dead.body, "to the dlq");
  assert.equal(dead.deadLetterReason, "r");
  await dlq.completeMessage(dead);
  // The message went to every subscription whose rule took it: empty them.
  for (const sub of ["all"]) {
    const r = client.createReceiver("events", sub, { receiveMode: "receiveAndDelete" });
    await receiveN(r, 1);
    await r.close();
  }
  await dlq.close();
  await red.close();
  await sender.close();
});

test("receiveDeferredMessages of a sequence number that is no deferred message is MessageNotFound (W8)", async () => {
  const receiver = client.createReceiver("defer");
  await rejectsWithCode(receiver.receiveDeferredMessages(Long.fromNumber(987654)), "MessageNotFound");
  await receiver.close();
});

test("a session receiver's subscribe() (W7)", async () => {
  const sender = client.createSender("sessions-stream");
  await sender.sendMessages([1, 2, 3].map((n) => ({ body: n, sessionId: "stream" })));
  const session = await client.acceptSession("sessions-stream", "stream", { maxAutoLockRenewalDurationInMs: 0 });
  const got = [];
  const errors = [];
  let done;
  const all = new Promise((resolve) => (done = resolve));
  const sub = session.subscribe(
    {
      async processMessage(m) {
        got.push(m.body);
        if (got.length === 3) done();
      },
      async processError(args) {
        errors.push(args.error);
      },
    },
    { autoCompleteMessages: true },
  );
  await withTimeout(all, 10_000, "three session messages through subscribe()");
  await sub.close();
  assert.deepEqual(got, [1, 2, 3], "in order (SS1)");
  assert.deepEqual(errors, []);
  await session.close();
  const check = await client.acceptSession("sessions-stream", "stream", { maxAutoLockRenewalDurationInMs: 0 });
  const deadline = Date.now() + 5000;
  let left;
  while ((left = await check.peekMessages(10)).length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(left, [], "auto-completed");
  await check.close();
  await sender.close();
});
