package minibus

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/minibus-go/minibus/internal/engine"
	"github.com/minibus-go/minibus/internal/store"
	"github.com/minibus-go/minibus/internal/wal"
	"github.com/stretchr/testify/require"
)

// enumRow pairs one value of a public enum with the engine's (or the
// store's, or the log's) value of the same meaning, both written by name.
// The names, their String values, agree but for case and a prefix of the
// public ones (SyncAlways, wal "always"); innerName, when set, is the inner
// value's name where it differs on purpose, and the public value may then
// map to another inner one.
type enumRow struct {
	pub, inner int
	innerName  string
}

// enumPair is a public enum and the inner one it mirrors: the rows, and
// how the root package converts between them (nil: not that way), by the
// code it converts with.
type enumPair struct {
	public, inner    string // type names; public is also its String's fallback
	prefix           string // of the public names, which the inner ones lack
	numInner         int    // the inner type's count
	rows             []enumRow
	pubName, inName  func(int) string
	toInner, fromInn func(int) int
}

// The seven public enums that mirror an inner type, each with its pairs
// written by name: TestEnumsMirror fails when a value is added on one side
// only, or one side is reordered, or a name changes on one side only.
var enumPairs = []enumPair{{
	// events.go: a cast each way; engine/events.go.
	public: "EventKind", inner: "engine.EventKind", numInner: int(engine.NumEventKinds),
	rows: []enumRow{
		{int(EventSent), int(engine.EventSent), ""},
		{int(EventScheduled), int(engine.EventScheduled), ""},
		{int(EventActivated), int(engine.EventActivated), ""},
		{int(EventDelivered), int(engine.EventDelivered), ""},
		{int(EventCompleted), int(engine.EventCompleted), ""},
		{int(EventAbandoned), int(engine.EventAbandoned), ""},
		{int(EventDeferred), int(engine.EventDeferred), ""},
		{int(EventDeadLettered), int(engine.EventDeadLettered), ""},
		{int(EventExpired), int(engine.EventExpired), ""},
		{int(EventLockLost), int(engine.EventLockLost), ""},
		{int(EventForwarded), int(engine.EventForwarded), ""},
		{int(EventEntityCreated), int(engine.EventEntityCreated), ""},
		{int(EventEntityDeleted), int(engine.EventEntityDeleted), ""},
		{int(EventCanceled), int(engine.EventCanceled), ""},
		{int(EventRemoved), int(engine.EventRemoved), ""},
		{int(EventReleased), int(engine.EventReleased), ""},
	},
	pubName: func(v int) string { return EventKind(v).String() },
	inName:  func(v int) string { return engine.EventKind(v).String() },
	toInner: func(v int) int { return int(engine.EventKind(EventKind(v))) },
	fromInn: func(v int) int { return int(EventKind(engine.EventKind(v))) },
}, {
	// events.go (options.faults): a cast from the engine's; engine/call.go.
	public: "Operation", inner: "engine.Operation", numInner: int(engine.NumOperations),
	rows: []enumRow{
		{int(OpSend), int(engine.OpSend), ""},
		{int(OpSchedule), int(engine.OpSchedule), ""},
		{int(OpCancelScheduled), int(engine.OpCancelScheduled), ""},
		{int(OpReceive), int(engine.OpReceive), ""},
		{int(OpPeek), int(engine.OpPeek), ""},
		{int(OpComplete), int(engine.OpComplete), ""},
		{int(OpAbandon), int(engine.OpAbandon), ""},
		{int(OpDeadLetter), int(engine.OpDeadLetter), ""},
		{int(OpDefer), int(engine.OpDefer), ""},
		{int(OpRenewLock), int(engine.OpRenewLock), ""},
		{int(OpAcceptSession), int(engine.OpAcceptSession), ""},
		{int(OpRelease), int(engine.OpRelease), ""},
	},
	pubName: func(v int) string { return Operation(v).String() },
	inName:  func(v int) string { return engine.Operation(v).String() },
	fromInn: func(v int) int {
		var got Operation = -1
		o := options{injectors: []func(Operation, string) error{func(op Operation, _ string) error { got = op; return nil }}}
		_ = o.faults()[0](engine.Operation(v), "q")
		return int(got)
	},
}, {
	// properties.go: a cast each way; engine/entity.go.
	public: "EntityStatus", inner: "engine.Status", numInner: int(engine.NumStatuses),
	rows: []enumRow{
		{int(EntityStatusActive), int(engine.StatusActive), ""},
		{int(EntityStatusDisabled), int(engine.StatusDisabled), ""},
		{int(EntityStatusSendDisabled), int(engine.StatusSendDisabled), ""},
		{int(EntityStatusReceiveDisabled), int(engine.StatusReceiveDisabled), ""},
	},
	pubName: func(v int) string { return EntityStatus(v).String() },
	inName:  func(v int) string { return engine.Status(v).String() },
	toInner: func(v int) int { return int(QueueProperties{Status: EntityStatus(v)}.config().Status) },
	fromInn: func(v int) int { return int(queueProperties(engine.Config{Status: engine.Status(v)}).Status) },
}, {
	// open.go: a bare cast to the log's; internal/wal/log.go.
	public: "SyncMode", inner: "wal.SyncMode", numInner: int(wal.NumSyncModes), prefix: "Sync",
	rows: []enumRow{
		{int(SyncAlways), int(wal.SyncAlways), ""},
		{int(SyncBatched), int(wal.SyncBatched), ""},
		{int(SyncNone), int(wal.SyncNone), ""},
	},
	pubName: func(v int) string { return SyncMode(v).String() },
	inName:  func(v int) string { return wal.SyncMode(v).String() },
	toInner: func(v int) int { return int(wal.SyncMode(SyncMode(v))) },
}, {
	// options.go: ReceiveMode.engine; engine/receive.go.
	public: "ReceiveMode", inner: "engine.Mode", numInner: int(engine.NumModes),
	rows: []enumRow{
		{int(ReceiveModePeekLock), int(engine.PeekLock), ""},
		{int(ReceiveModeReceiveAndDelete), int(engine.ReceiveAndDelete), ""},
	},
	pubName: func(v int) string { return ReceiveMode(v).String() },
	inName:  func(v int) string { return engine.Mode(v).String() },
	toInner: func(v int) int { return int(ReceiveMode(v).engine()) },
}, {
	// options.go: SubQueue.queue and subQueueOf; internal/store/message.go.
	public: "SubQueue", inner: "store.Queue", numInner: int(store.NumQueues),
	rows: []enumRow{
		{int(SubQueueNone), int(store.Main), "Main"}, // the entity's own queue
		{int(SubQueueDeadLetter), int(store.DeadLetterQueue), ""},
		{int(SubQueueTransfer), int(store.TransferQueue), ""},
	},
	pubName: func(v int) string { return SubQueue(v).String() },
	inName:  func(v int) string { return store.Queue(v).String() },
	toInner: func(v int) int { return int(SubQueue(v).queue()) },
	fromInn: func(v int) int { return int(subQueueOf(store.Queue(v))) },
}, {
	// message.go: messageState, from the store's; internal/store/message.go.
	// A received message shows a locked one as active, and a delayed one
	// (released for a later retry) too: it is receivable again.
	public: "MessageState", inner: "store.State", numInner: int(store.NumStates),
	rows: []enumRow{
		{int(MessageStateActive), int(store.Available), "available"},
		{int(MessageStateActive), int(store.Locked), "locked"},
		{int(MessageStateDeferred), int(store.Deferred), ""},
		{int(MessageStateScheduled), int(store.Scheduled), ""},
		{int(MessageStateActive), int(store.Delayed), "delayed"},
	},
	pubName: func(v int) string { return MessageState(v).String() },
	inName:  func(v int) string { return store.State(v).String() },
	fromInn: func(v int) int { return int(messageState(store.State(v))) },
}}

// TestEnumsMirror checks every public enum that mirrors an inner one, value
// by value and name by name, both ways: every public value and every inner
// value is paired, and none is left over on either side.
func TestEnumsMirror(t *testing.T) {
	declared := publicEnumValues(t)
	require.Len(t, enumPairs, 7)
	for _, p := range enumPairs {
		t.Run(p.public, func(t *testing.T) {
			numPub := declared[p.public]
			require.NotZero(t, numPub, "no constants of type %s in the root package", p.public)

			// Every inner value once, every public value at least once, in
			// order of the inner values.
			pubSeen := make([]bool, numPub)
			require.Len(t, p.rows, p.numInner, "%s has %d values, the table %d", p.inner, p.numInner, len(p.rows))
			for i, r := range p.rows {
				require.Equal(t, i, r.inner, "row %d: %s %s out of order", i, p.inner, p.inName(r.inner))
				require.True(t, r.pub >= 0 && r.pub < numPub, "row %d: %s %d is not declared", i, p.public, r.pub)
				pubSeen[r.pub] = true
			}
			for v, seen := range pubSeen {
				require.True(t, seen, "%s %s has no %s", p.public, p.pubName(v), p.inner)
			}

			// Names: distinct, named, and the same on both sides.
			names := map[string]bool{}
			for v := range numPub {
				s := p.pubName(v)
				require.NotEmpty(t, s)
				require.False(t, strings.HasPrefix(s, p.public+"("), "%s %d has no name", p.public, v)
				require.False(t, names[s], "%q twice", s)
				names[s] = true
			}
			require.Equal(t, p.public+"("+strconv.Itoa(numPub)+")", p.pubName(numPub))
			require.Equal(t, p.public+"(-1)", p.pubName(-1))
			for _, r := range p.rows {
				pub, in := p.pubName(r.pub), p.inName(r.inner)
				if r.innerName != "" {
					require.Equal(t, r.innerName, in, "%s %s", p.inner, pub)
					continue
				}
				require.Equal(t, strings.ToLower(strings.TrimPrefix(pub, p.prefix)), strings.ToLower(in),
					"%s %d is %s, %s %d is %s", p.public, r.pub, pub, p.inner, r.inner, in)
			}

			// The conversions the root package makes.
			require.True(t, p.toInner != nil || p.fromInn != nil, "no conversion")
			for _, r := range p.rows {
				if p.fromInn != nil {
					require.Equal(t, r.pub, p.fromInn(r.inner), "%s %s to %s", p.inner, p.inName(r.inner), p.public)
				}
				if p.toInner != nil && r.innerName == "" {
					require.Equal(t, r.inner, p.toInner(r.pub), "%s %s to %s", p.public, p.pubName(r.pub), p.inner)
				}
			}
		})
	}
}

// publicEnumValues counts the constants that the root package's non-test
// files declare of each named type, so that a public value added without
// its inner one is seen even if its String is not updated. Each enum is
// an iota block from zero: TestEnumsMirror checks the values by its rows.
func publicEnumValues(t *testing.T) map[string]int {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	require.NoError(t, err)
	n := map[string]int{}
	for _, f := range pkgs["minibus"].Files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			typ := "" // a spec without type or values repeats the one before
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				switch {
				case vs.Type != nil:
					typ = ""
					if id, ok := vs.Type.(*ast.Ident); ok {
						typ = id.Name
					}
				case len(vs.Values) > 0:
					typ = ""
					if c, ok := vs.Values[0].(*ast.CallExpr); ok {
						if id, ok := c.Fun.(*ast.Ident); ok {
							typ = id.Name
						}
					}
				}
				if typ != "" {
					n[typ] += len(vs.Names)
				}
			}
		}
	}
	return n
}
