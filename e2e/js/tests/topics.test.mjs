// The JavaScript SDK on a topic against `minibus serve`: subscriptions with
// the $Default, SQL (with an action) and correlation rules of Config.json,
// the rule manager (add-rule, enumerate-rules, remove-rule on $management),
// and subscribe(), the streaming receiver (SEMANTICS W5, W8, R1–R5).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
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

test("a topic's subscriptions each get what their rules select; a SQL action sets a property (R1–R4)", async () => {
  const sender = client.createSender("events");
  await sender.sendMessages([
    { body: "red-7", subject: "paint", applicationProperties: { color: "red", priority: 7 } },
    { body: "blue-3", subject: "paint", applicationProperties: { color: "blue", priority: 3 } },
    { body: "red-9", subject: "other", applicationProperties: { color: "red", priority: 9 } },
  ]);
  const bodies = async (sub, n) => {
    const r = client.createReceiver("events", sub, { receiveMode: "receiveAndDelete" });
    const got = await receiveN(r, n);
    await receiveNone(r);
    await r.close();
    return got;
  };
  assert.deepEqual((await bodies("all", 3)).map((m) => m.body), ["red-7", "blue-3", "red-9"]);
  const high = await bodies("high-priority", 2);
  assert.deepEqual(high.map((m) => m.body), ["red-7", "red-9"]);
  for (const m of high) assert.equal(m.applicationProperties.tagged, "yes", "the rule's action (R3)");
  assert.deepEqual((await bodies("red", 1)).map((m) => m.body), ["red-7"]);
  await sender.close();
});

test("the rule manager: list $Default, add SQL and correlation rules with an action, delete (W8)", async () => {
  const rules = client.createRuleManager("catalog", "rules");
  const list = async () => {
    const out = [];
    for await (const r of rules.listRules()) out.push(r);
    return out.sort((a, b) => a.name.localeCompare(b.name));
  };
  const initial = await list();
  assert.deepEqual(initial.map((r) => r.name), ["$Default"]);
  assert.deepEqual(initial[0].filter, { sqlExpression: "1=1" }, "the TrueFilter");

  await rules.createRule("big", { sqlExpression: "amount > 10" }, { sqlExpression: "SET big = 'yes'" });
  await rules.createRule("eu-invoices", {
    subject: "invoice",
    correlationId: "c-1",
    applicationProperties: { region: "eu" },
  });
  await rejectsWithCode(rules.createRule("big", { sqlExpression: "1=1" }), "MessagingEntityAlreadyExists");
  await rules.deleteRule("$Default");
  const now = await list();
  assert.deepEqual(now.map((r) => r.name), ["big", "eu-invoices"]);
  const [big, eu] = now;
  assert.equal(big.filter.sqlExpression, "amount > 10");
  assert.equal(big.action.sqlExpression, "SET big = 'yes'");
  assert.equal(eu.filter.subject, "invoice");
  assert.equal(eu.filter.correlationId, "c-1");
  assert.deepEqual(eu.filter.applicationProperties, { region: "eu" });
  assert.equal(eu.action.sqlExpression, undefined, "no action");

  const sender = client.createSender("catalog");
  await sender.sendMessages([
    { body: "small", applicationProperties: { amount: 3 } },
    { body: "large", applicationProperties: { amount: 30 } },
    { body: "invoice-eu", subject: "invoice", correlationId: "c-1", applicationProperties: { region: "eu" } },
    { body: "invoice-us", subject: "invoice", correlationId: "c-1", applicationProperties: { region: "us" } },
  ]);
  const receiver = client.createReceiver("catalog", "rules", { receiveMode: "receiveAndDelete" });
  const got = await receiveN(receiver, 2);
  assert.deepEqual(got.map((m) => m.body), ["large", "invoice-eu"]);
  assert.equal(got[0].applicationProperties.big, "yes");
  await receiveNone(receiver);

  await rules.deleteRule("big");
  assert.deepEqual((await list()).map((r) => r.name), ["eu-invoices"]);
  await rejectsWithCode(rules.deleteRule("big"), "MessagingEntityNotFound");
  // Leave the subscription as Config.json made it.
  await rules.deleteRule("eu-invoices");
  await rules.createRule("$Default", { sqlExpression: "1=1" });
  assert.deepEqual((await list()).map((r) => r.name), ["$Default"]);
  await receiver.close();
  await sender.close();
});

test("subscribe(): the streaming receiver delivers each message to processMessage, settled there (W5)", async () => {
  const sender = client.createSender("stream");
  await sender.sendMessages([1, 2, 3, 4, 5].map((n) => ({ body: n })));
  const receiver = client.createReceiver("stream");
  const got = [];
  const errors = [];
  let done;
  const all = new Promise((resolve) => (done = resolve));
  const sub = receiver.subscribe(
    {
      async processMessage(m) {
        await receiver.completeMessage(m);
        got.push(m.body);
        if (got.length === 5) done();
      },
      async processError(args) {
        errors.push(args.error);
      },
    },
    { autoCompleteMessages: false, maxConcurrentCalls: 2 },
  );
  await withTimeout(all, 10_000, "five messages through subscribe()");
  await sub.close();
  assert.deepEqual(got.sort(), [1, 2, 3, 4, 5]);
  assert.deepEqual(errors, []);
  assert.deepEqual(await receiver.peekMessages(10), [], "all five completed");

  // Auto-complete: processMessage returning completes the message.
  await sender.sendMessages({ body: "auto" });
  let seen;
  const one = new Promise((resolve) => (seen = resolve));
  const sub2 = receiver.subscribe({
    async processMessage(m) {
      seen(m.body);
    },
    async processError(args) {
      errors.push(args.error);
    },
  });
  assert.equal(await withTimeout(one, 10_000, "a message through subscribe()"), "auto");
  await sub2.close();
  await receiver.close();
  // The auto-completion is settled before close returns or after: read
  // the queue on a fresh receiver until it is empty.
  const check = client.createReceiver("stream");
  const deadline = Date.now() + 5000;
  let left;
  while ((left = await check.peekMessages(10)).length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(left, [], "auto-completed");
  assert.deepEqual(errors, []);
  await check.close();
  await sender.close();
});
