// The JavaScript SDK against `minibus serve`: queues, peek-lock and
// receive-and-delete, every settlement, peek, scheduling, the drain that
// ends every receiveMessages, application properties, errors. Rules cited
// are SEMANTICS.md's.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startMinibus, newClient, receiveN, receiveNone, rejectsWithCode } from "../lib/minibus.mjs";

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let server, client;
before(async () => {
  server = await startMinibus();
  client = await newClient(server);
});
after(async () => {
  await client?.close();
  await server?.stop();
});

test("send one message, a batch and an array; createMessageBatch's maxSizeInBytes is the entity's max message size (W4)", async () => {
  const sender = client.createSender("send");
  const batch = await sender.createMessageBatch();
  assert.equal(batch.maxSizeInBytes, 512 * 1024, "the queue's MaxMessageSizeInKilobytes × 1024");
  const dflt = client.createSender("peek");
  assert.equal((await dflt.createMessageBatch()).maxSizeInBytes, 256 * 1024, "minibus's default, 256 KiB");
  await dflt.close();

  await sender.sendMessages({ body: "one", messageId: "m-0" });
  for (let i = 1; i <= 5; i++) assert.ok(batch.tryAddMessage({ body: `batch-${i}`, messageId: `m-${i}` }));
  await sender.sendMessages(batch);
  await sender.sendMessages([6, 7, 8].map((i) => ({ body: { n: i }, messageId: `m-${i}` })));

  const receiver = client.createReceiver("send", { receiveMode: "receiveAndDelete" });
  const got = await receiveN(receiver, 9);
  assert.deepEqual(got.map((m) => m.messageId), ["m-0", "m-1", "m-2", "m-3", "m-4", "m-5", "m-6", "m-7", "m-8"], "oldest first (L1)");
  assert.deepEqual(got.map((m) => m.body), ["one", "batch-1", "batch-2", "batch-3", "batch-4", "batch-5", { n: 6 }, { n: 7 }, { n: 8 }]);
  const seqs = got.map((m) => Number(m.sequenceNumber));
  assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
  assert.equal(new Set(seqs).size, 9);

  // A message above the entity's max message size is refused (W4).
  await rejectsWithCode(sender.sendMessages({ body: Buffer.alloc(600 * 1024) }), "MessageSizeExceeded");
  await receiver.close();
  await sender.close();
});

test("peek-lock receive and complete (W5, W6)", async () => {
  const sender = client.createSender("peeklock");
  await sender.sendMessages([{ body: "a" }, { body: "b" }, { body: "c" }]);
  const receiver = client.createReceiver("peeklock");
  const got = await receiveN(receiver, 3);
  assert.deepEqual(got.map((m) => m.body), ["a", "b", "c"]);
  for (const m of got) {
    assert.match(m.lockToken, uuid);
    assert.ok(m.lockedUntilUtc > m.enqueuedTimeUtc, "locked until after it was enqueued");
    assert.equal(m.deliveryCount, 0, "the header's delivery-count is DeliveryCount − 1 (W5)");
    assert.equal(m.state, "active");
    assert.ok(m.enqueuedTimeUtc instanceof Date);
  }
  for (const m of got) await receiver.completeMessage(m);
  assert.deepEqual(await receiver.peekMessages(10), [], "completed messages are gone");
  await receiver.close();
  await sender.close();
});

test("receive-and-delete: no lock token, nothing left (W5)", async () => {
  const sender = client.createSender("receive-and-delete");
  await sender.sendMessages([{ body: 1 }, { body: 2 }]);
  const receiver = client.createReceiver("receive-and-delete", { receiveMode: "receiveAndDelete" });
  const got = await receiveN(receiver, 2);
  assert.deepEqual(got.map((m) => m.body), [1, 2]);
  for (const m of got) assert.equal(m.lockToken, undefined);
  await receiveNone(receiver);
  assert.deepEqual(await receiver.peekMessages(10), []);
  await receiver.close();
  await sender.close();
});

test("abandon with properties to modify: delivered again, counted (W6, L4)", async () => {
  const sender = client.createSender("abandon");
  await sender.sendMessages({ body: "again", applicationProperties: { attempt: "first" } });
  const receiver = client.createReceiver("abandon");
  const [m1] = await receiveN(receiver, 1);
  await receiver.abandonMessage(m1, { attempt: "second", reason: "busy" });
  const [m2] = await receiveN(receiver, 1);
  assert.equal(m2.body, "again");
  assert.equal(m2.deliveryCount, 1);
  assert.equal(m2.applicationProperties.attempt, "second");
  assert.equal(m2.applicationProperties.reason, "busy");
  assert.equal(m2.sequenceNumber.toString(), m1.sequenceNumber.toString());
  await receiver.completeMessage(m2);
  await receiver.close();
  await sender.close();
});

test("defer, receiveDeferredMessages and complete through $management (W6, W8)", async () => {
  const sender = client.createSender("defer");
  await sender.sendMessages([{ body: "later-1" }, { body: "later-2" }]);
  const receiver = client.createReceiver("defer");
  const got = await receiveN(receiver, 2);
  for (const m of got) await receiver.deferMessage(m, { deferredBy: "test" });
  await receiveNone(receiver);
  const seqs = got.map((m) => m.sequenceNumber);
  const deferred = await receiver.receiveDeferredMessages(seqs);
  assert.deepEqual(deferred.map((m) => m.body).sort(), ["later-1", "later-2"]);
  for (const m of deferred) {
    assert.equal(m.state, "deferred");
    assert.match(m.lockToken, uuid);
    assert.equal(m.applicationProperties.deferredBy, "test");
  }
  // A deferred message has no link: the SDK settles it on $management.
  for (const m of deferred) await receiver.completeMessage(m);
  assert.deepEqual(await receiver.peekMessages(10), []);
  await receiver.close();
  await sender.close();
});

test("dead-letter with reason and description; MaxDeliveryCount dead-letters (W6, D1)", async () => {
  const sender = client.createSender("deadletter");
  await sender.sendMessages({ body: "poison", messageId: "dl-1" });
  const receiver = client.createReceiver("deadletter");
  const [m] = await receiveN(receiver, 1);
  await receiver.deadLetterMessage(m, { deadLetterReason: "Invalid", deadLetterErrorDescription: "no such customer", note: "kept" });

  // MaxDeliveryCount is 2: the second abandon moves it.
  await sender.sendMessages({ body: "flaky", messageId: "dl-2" });
  for (let i = 0; i < 2; i++) {
    const [f] = await receiveN(receiver, 1);
    assert.equal(f.messageId, "dl-2");
    await receiver.abandonMessage(f);
  }
  await receiveNone(receiver);

  const dlq = client.createReceiver("deadletter", { subQueueType: "deadLetter" });
  const got = await receiveN(dlq, 2);
  const byId = Object.fromEntries(got.map((x) => [x.messageId, x]));
  assert.equal(byId["dl-1"].deadLetterReason, "Invalid");
  assert.equal(byId["dl-1"].deadLetterErrorDescription, "no such customer");
  assert.equal(byId["dl-1"].applicationProperties.note, "kept");
  assert.equal(byId["dl-1"].state, "active");
  assert.equal(byId["dl-2"].deadLetterReason, "MaxDeliveryCountExceeded");
  for (const x of got) await dlq.completeMessage(x);
  await receiveNone(dlq);
  await dlq.close();
  await receiver.close();
  await sender.close();
});

test("peekMessages continues where it stopped, from a sequence number too, and is empty at the end (W8)", async () => {
  const sender = client.createSender("peek");
  await sender.sendMessages([0, 1, 2, 3, 4].map((i) => ({ body: `p${i}` })));
  const receiver = client.createReceiver("peek");
  const first = await receiver.peekMessages(3);
  assert.deepEqual(first.map((m) => m.body), ["p0", "p1", "p2"]);
  for (const m of first) assert.equal(m.lockToken, undefined);
  const rest = await receiver.peekMessages(3);
  assert.deepEqual(rest.map((m) => m.body), ["p3", "p4"]);
  assert.deepEqual(await receiver.peekMessages(3), []);
  const again = await receiver.peekMessages(10, { fromSequenceNumber: first[1].sequenceNumber });
  assert.deepEqual(again.map((m) => m.body), ["p1", "p2", "p3", "p4"]);
  // Peeking locks nothing.
  const got = await receiveN(receiver, 5);
  for (const m of got) await receiver.completeMessage(m);
  await receiver.close();
  await sender.close();
});

test("scheduleMessages and cancelScheduledMessages; scheduledEnqueueTimeUtc on send (W4, W8, S1)", async () => {
  const sender = client.createSender("schedule");
  const receiver = client.createReceiver("schedule");
  const at = new Date(Date.now() + 3600_000);
  const seqs = await sender.scheduleMessages([{ body: "s1" }, { body: "s2" }], at);
  assert.equal(seqs.length, 2);
  await sender.sendMessages({ body: "s3", scheduledEnqueueTimeUtc: at });
  const peeked = await receiver.peekMessages(10);
  assert.deepEqual(peeked.map((m) => m.body), ["s1", "s2", "s3"]);
  for (const m of peeked) {
    assert.equal(m.state, "scheduled");
    assert.equal(m.scheduledEnqueueTimeUtc.getTime(), Math.floor(at.getTime()));
  }
  await receiveNone(receiver);
  await sender.cancelScheduledMessages(seqs);
  const left = await receiver.peekMessages(10, { fromSequenceNumber: peeked[0].sequenceNumber });
  assert.deepEqual(left.map((m) => m.body), ["s3"]);
  await sender.cancelScheduledMessages(left[0].sequenceNumber);
  assert.deepEqual(await receiver.peekMessages(10, { fromSequenceNumber: peeked[0].sequenceNumber }), []);
  await receiver.close();
  await sender.close();
});

test("settle through $management after the receiving link closed (W6, L10)", async () => {
  const sender = client.createSender("settle-after-close");
  await sender.sendMessages([{ body: "c" }, { body: "d" }, { body: "a" }]);
  const first = client.createReceiver("settle-after-close");
  const [c, d, a] = await receiveN(first, 3);
  await first.close();
  // The SDK refuses settling on a closed receiver; another receiver settles
  // by lock token on $management, the message's link being gone.
  const second = client.createReceiver("settle-after-close");
  await second.completeMessage(c);
  await second.deadLetterMessage(d, { deadLetterReason: "late", deadLetterErrorDescription: "after close" });
  await second.abandonMessage(a);
  const [again] = await receiveN(second, 1);
  assert.equal(again.body, "a");
  assert.equal(again.deliveryCount, 1);
  await second.completeMessage(again);
  const dlq = client.createReceiver("settle-after-close", { subQueueType: "deadLetter", receiveMode: "receiveAndDelete" });
  const [dead] = await receiveN(dlq, 1);
  assert.equal(dead.body, "d");
  assert.equal(dead.deadLetterReason, "late");
  await dlq.close();
  assert.deepEqual(await second.peekMessages(10), []);
  await second.close();
  await sender.close();
});

test("receiveMessages ends with a drain the server answers at once (W5)", async () => {
  const sender = client.createSender("drain");
  const receiver = client.createReceiver("drain");
  // Nothing there: the receive waits maxWaitTimeInMs, then drains.
  let t0 = Date.now();
  assert.deepEqual(await receiver.receiveMessages(10, { maxWaitTimeInMs: 500 }), []);
  let took = Date.now() - t0;
  assert.ok(took < 500 + 1000, `an empty receive took ${took} ms`);

  // Three of ten: after the first message the SDK waits 1 s for more, then
  // drains the 7 credits left and waits up to 1 s more for the drained
  // flow; without it, it would also close the link. Answered, the receive
  // takes about 1 s of the 5 s allowed.
  await sender.sendMessages([{ body: 1 }, { body: 2 }, { body: 3 }]);
  t0 = Date.now();
  const got = await receiver.receiveMessages(10, { maxWaitTimeInMs: 5000 });
  took = Date.now() - t0;
  assert.equal(got.length, 3);
  assert.ok(took < 1700, `a receive of 3 of 10 took ${took} ms: the drain was not answered`);
  // White box: the SDK closes its link when a drain is not answered.
  assert.ok(receiver._batchingReceiver.isOpen(), "the receiver link is still open after the drain");

  // The drained link receives again with fresh credit, on the same link.
  await sender.sendMessages({ body: 4 });
  const more = await receiveN(receiver, 1);
  assert.equal(more[0].body, 4);
  for (const m of [...got, ...more]) await receiver.completeMessage(m);
  assert.ok(receiver._batchingReceiver.isOpen());
  await receiver.close();
  await sender.close();
});

test("application properties and message properties of several types round-trip (W4, W5)", async () => {
  const sender = client.createSender("properties");
  const when = new Date("2026-03-04T05:06:07.089Z");
  const props = {
    str: "text",
    empty: "",
    unicode: "žluťoučký kůň 🐎",
    int: 42,
    zero: 0,
    negative: -7,
    big: 2 ** 40,
    bigNegative: -(2 ** 40),
    double: 3.25,
    tiny: 1e-300,
    maxSafe: Number.MAX_SAFE_INTEGER, // rhea: ulong
    minSafe: Number.MIN_SAFE_INTEGER, // rhea: long
    maxUint: 4294967295,
    nothing: null,
    yes: true,
    no: false,
    when,
  };
  await sender.sendMessages({
    body: { order: 17, items: ["x", "y"] },
    messageId: "props-1",
    correlationId: "corr-1",
    subject: "invoice",
    contentType: "application/json",
    to: "billing",
    replyTo: "replies",
    timeToLive: 60_000,
    applicationProperties: props,
  });
  await sender.sendMessages({ body: Buffer.from([0, 1, 2, 0xff]), messageId: "props-2" });
  await sender.sendMessages({ body: "dates", applicationProperties: { when } });
  const receiver = client.createReceiver("properties", { receiveMode: "receiveAndDelete" });
  const [m, raw] = await receiveN(receiver, 2);
  assert.deepEqual(m.body, { order: 17, items: ["x", "y"] });
  assert.equal(m.messageId, "props-1");
  assert.equal(m.correlationId, "corr-1");
  assert.equal(m.subject, "invoice");
  assert.equal(m.contentType, "application/json");
  assert.equal(m.to, "billing");
  assert.equal(m.replyTo, "replies");
  assert.equal(m.timeToLive, 60_000);
  assert.equal(m.expiresAtUtc.getTime() - m.enqueuedTimeUtc.getTime(), 60_000);
  // A timestamp comes back as a timestamp: the SDK turns it into its
  // milliseconds unless the receiver says skipConvertingDate.
  assert.deepEqual(m.applicationProperties, { ...props, when: when.getTime() });
  assert.ok(Buffer.isBuffer(raw.body));
  assert.deepEqual([...raw.body], [0, 1, 2, 0xff]);
  await receiver.close();
  const dates = client.createReceiver("properties", { receiveMode: "receiveAndDelete", skipConvertingDate: true });
  const [d] = await receiveN(dates, 1);
  assert.ok(d.applicationProperties.when instanceof Date);
  assert.equal(d.applicationProperties.when.getTime(), when.getTime());
  await dates.close();
  await sender.close();
});


test("a missing queue is MessagingEntityNotFound, to a sender and to a receiver (W2, W3)", async () => {
  const sender = client.createSender("no-such-queue");
  await rejectsWithCode(sender.sendMessages({ body: "x" }), "MessagingEntityNotFound");
  await sender.close();
  const receiver = client.createReceiver("no-such-queue");
  await rejectsWithCode(receiver.receiveMessages(1, { maxWaitTimeInMs: 1000 }), "MessagingEntityNotFound");
  await receiver.close();
});
