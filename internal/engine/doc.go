// Package engine is the broker behind minibus's public API: entities and
// their one mutex each, every transition of a message, fan-out from topics
// to subscriptions, the catch-up that makes time exact, the one timer, and
// blocked receivers. It has its own vocabulary (Entity, Config, Kind,
// Status, Mode, Receiver, Settlement) and never imports the root package;
// the root maps its public types onto these, checks what callers pass, and
// copies messages in and out (SEMANTICS V4). Messages are store.Message
// records in each entity's store.Store.
//
// This is where minibus's maintainer notes live; the root package's
// documentation is for its users.
//
// # Layout
//
// The folders are the layers; each imports only those below it:
//
//	minibus/                 the public API: handles, options, validation,
//	                         copies at the boundary (SEMANTICS V4), docs
//	internal/engine/         the broker: entities and their mutexes, every
//	                         message transition (transitions.go), topic
//	                         fan-out, catch-up and the one timer, blocked
//	                         receivers
//	internal/store/          one entity's messages: btree indexes, the
//	                         arena, the list of locks, the deadline index,
//	                         recycled records, the byte quota
//	internal/wal/            the write-ahead log of a durable namespace:
//	                         segments, checksummed records, group commit,
//	                         snapshots, and a file system that can crash
//	internal/sqlfilter/      the SQL filter and action language, and
//	                         correlation filters
//	internal/errs/           the sentinel errors the root re-exports
//	internal/modeltest/      the reference model of the model-based test
//	minibustest/             the test environment built on the root
//	azsb/, bench/            modules of their own: the Azure SDK's types
//	                         over the root, and the benchmarks against
//	                         other brokers
//
// # How a call flows
//
// The root checks a call's arguments and copies the caller's messages into
// store records. Every exported engine call then comes in through one
// frame, a call (call.go), a value on its stack: its entry asks the fault
// injectors, checks ctx, the broker and the receiver, reads the clock and
// catches up (catchup.go), so that everything in the namespace due at or
// before now happens first, in time order (SEMANTICS T3), then locks its
// entity and checks its status. The call applies one or more transitions
// (transitions.go); its exit unlocks, delivers what it forwarded, hands
// its events to the observer and waits for its records to be durable. A
// receive returns pinned snapshots, which the root copies into the
// caller's messages outside every lock and releases.
//
// # Lock order
//
// Broker.mu, then a topic's Entity.mu, then its subscriptions' mutexes in
// their order (a queue's mutex stands alone), then the scheduler's locks:
// sched.timerMu, then sched.mu, then the clock's own. The catch-up mutex
// (sched.catchMu) is taken with no other lock held. A Receiver has no lock of its own: its fields are
// guarded by its entity's mutex or are atomic. No lock is held while a
// caller's code runs or while blocking on a channel. The events' mutex
// (events.mu) and the outbox's (outbox.mu) are leaves; outbox.flushMu is
// taken with no entity lock held, and no lock at all is held while the
// observer runs (events.go).
//
// # Durability
//
// The durable state of a namespace is its entity definitions (Create,
// Update, Delete), the messages accepted with their sequence numbers, and
// their state changes: delivery counts, deferral, dead-lettering with a
// reason, activation with a new number, and removal. Every one of those
// changes is a method in transitions.go (and Create, Update and Delete), and
// each takes what it needs as arguments, the instant included, reading no
// clock. A durable broker has a Journal (journal.go): each transition
// appends one record while the entity's lock is held, so log order is state
// order, and each exported call ends by waiting until its records are as
// durable as the log promises. A record is a value of one small type per
// kind (record.go), which holds its fields, encodes and decodes them and
// applies them at replay, side by side: the transition says what happened,
// e.log(r.kind(), r.encode) with r on its stack, which costs nothing
// without a journal; a call whose record grows with its caller's data
// builds it first (begin), checks its size (SEMANTICS V3), and commits or
// drops it. A snapshot (snapshot.go) holds each entity's state as an
// entityState, with its encode, decode and apply side by side in the same
// way. Recover (replay.go) rebuilds a broker from the newest snapshot and
// the records after it: it decodes each record's kind and applies it,
// through the same methods the live call used. A new
// journaled fact is a kind and a type in record.go, and the line of the
// transition that logs it; testdata/records at the root holds a log of
// every kind written before, which must keep opening (record_test.go
// checks its bytes). Locks are not durable: at recovery every lock has
// ended (SEMANTICS L6), and the catch-up then runs at the clock's now, as
// after a jump of a mock clock.
package engine
