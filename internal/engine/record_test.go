package engine

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minibus-go/minibus/internal/sqlfilter"
	"github.com/minibus-go/minibus/internal/store"
	"github.com/stretchr/testify/require"
)

// Every kind of record has a name and a type (record.go) whose kind is
// that kind, which the replay applies either to an entity or to the broker.
func TestRecordEveryKindHasAType(t *testing.T) {
	require.Equal(t, len(recNames), len(newRecords), "a kind without a type, or a type without a name")
	for k := recKind(1); int(k) < len(recNames); k++ {
		require.NotEmpty(t, recNames[k], "kind %d has no name", k)
		r := newRecord(k)
		require.NotNil(t, r, "%v has no type", k)
		require.Equal(t, k, r.kind(), "%v's type", k)
		_, onEntity := r.(entityRecord)
		_, onBroker := r.(brokerRecord)
		require.True(t, onEntity != onBroker, "%v applies to an entity or to the broker", k)
	}
	require.Nil(t, newRecord(0))
	require.Nil(t, newRecord(recKind(len(recNames))))
}

// testMessage is a message with every field a record carries set.
func testMessage(seq int64) *store.Message {
	m := store.NewMessage()
	m.MessageID = "id"
	m.IDSeed = 7
	m.SessionID = "s"
	m.Headers = &store.Headers{ContentType: "ct", CorrelationID: "c", Subject: "sub", To: "to", ReplyTo: "rt", ReplyToSessionID: "rs", PartitionKey: "pk"}
	m.Body = []byte("body")
	m.Props = map[string]any{"s": "x", "i": int64(-3), "b": true, "f": 1.5, "d": time.Second, "raw": []byte{1}, "u": uint16(9)}
	m.Scheduled = 10
	m.TTL = 20
	m.Enqueued = 30
	m.Expires = 50
	m.Deliveries = 2
	m.EnqueuedSeq = seq
	m.Hops = 1
	m.DL = &store.DeadLetter{Reason: "r", Description: "d", Source: "q"}
	m.FromDeferral = true
	return m
}

// Each kind of record decodes to what was encoded.
func TestRecordRoundTrip(t *testing.T) {
	cfg := Config{LockDuration: time.Minute, MaxDeliveryCount: 3, TTL: time.Hour, DeadLetterOnExpiry: true, AutoDeleteOnIdle: time.Hour,
		RequiresSession: true, RequiresDuplicateDetection: true, DuplicateWindow: time.Minute, ForwardTo: "f", ForwardDeadLetteredTo: "g",
		MaxSizeMB: 1, MaxMessageKB: 64, Status: StatusDisabled}
	rule := RuleSpec{Name: "r", Filter: FilterSQL, SQL: "a = @p", Params: map[string]any{"@p": int32(1)},
		Correlation: sqlfilter.CorrelationFields{Subject: "s", To: "t"}, CorrelationProps: map[string]any{"k": "v"},
		HasAction: true, ActionSQL: "SET b = 1", ActionParams: map[string]any{"x": uint64(2)}}
	keys := []store.Key{{Seq: 1}, {Seq: 2, Copy: 3}}
	take := takeRecord{q: store.DeadLetterQueue, mode: ReceiveAndDelete, session: "s", at: 5, until: 6, keys: keys}
	records := []logRecord{
		&createRecord{entityKind: KindQueue, cfg: cfg, at: 1},
		&createRecord{entityKind: KindSubscription, cfg: cfg, at: 1, rules: []RuleSpec{rule, {Name: "t", Filter: FilterTrue}}},
		&deleteRecord{at: -1},
		&updateRecord{cfg: cfg, at: 2},
		&ruleAddRecord{rule: rule, at: 3},
		&ruleDeleteRecord{name: "R", at: 4},
		&sendRecord{at: 5, msgs: []*store.Message{testMessage(1), testMessage(2)}},
		&cancelRecord{at: 6, seqs: []int64{3, 4}},
		&take,
		&fetchRecord{take},
		&settleRecord{q: store.TransferQueue, key: store.Key{Seq: 9, Copy: 1}, op: DeadLetter, at: 7, retry: 8, props: map[string]any{"p": "q"}, reason: "why", description: "desc"},
		&removeRecord{q: store.Main, session: "s", at: 9, keys: keys},
		&deadlineRecord{what: dlExpire, q: store.Main, key: store.Key{Seq: 4}, session: "s", at: 10},
		&holdRecord{id: "s", mode: PeekLock, at: 11},
		&releaseRecord{id: "s", at: 12, expired: true},
		&stateRecord{id: "s", state: []byte{}, at: 13},
		&stateRecord{id: "s", at: 13},
		&transferRecord{fromName: "t", fromSub: "s", key: store.Key{Seq: 5, Copy: 2}, at: 14, msg: testMessage(5)},
		&transferFailedRecord{key: store.Key{Seq: 6}, why: "it does not exist"},
		&touchRecord{at: 15},
		&renewRecord{session: true, id: "s", until: 16},
		&renewRecord{q: store.Main, key: store.Key{Seq: 7}, until: 17},
		&transferLostRecord{key: store.Key{Seq: 8}},
	}
	seen := map[recKind]bool{}
	for _, r := range records {
		seen[r.kind()] = true
		var enc encoder
		r.encode(&enc)
		got := newRecord(r.kind())
		d := &decoder{b: enc.b}
		got.decode(d)
		require.NoError(t, d.err, "%v", r.kind())
		require.Empty(t, d.b, "%v: bytes left", r.kind())
		if tr, ok := got.(*transferRecord); ok {
			tr.msgAt = r.(*transferRecord).msgAt
		}
		require.Equal(t, r, got, "%v", r.kind())
	}
	for k := recKind(1); int(k) < len(recNames); k++ {
		require.True(t, seen[k], "no round trip of %v", k)
	}
}

// The records of a log written before the records had types
// (testdata/records at the root, which TestOpenReadsEveryRecordKind opens)
// decode, and encode again to the same bytes: the format is unchanged.
func TestRecordFormatUnchanged(t *testing.T) {
	seen := map[recKind]int{}
	for _, name := range []string{"log", "snap"} {
		dir := filepath.Join("..", "..", "testdata", "records", name)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, entry := range entries {
			if !strings.HasSuffix(entry.Name(), ".wal") {
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, entry.Name()))
			require.NoError(t, err)
			// Frames of a length, a CRC and the record padded to 8 bytes,
			// after a 40-byte header, up to a zero length.
			for off := 40; off+8 <= len(data); {
				n := int(data[off]) | int(data[off+1])<<8 | int(data[off+2])<<16 | int(data[off+3])<<24
				if n == 0 {
					break
				}
				rec := data[off+8 : off+8+n]
				off += 8 + (n+7)&^7
				d := &decoder{b: rec}
				k := recKind(d.u8())
				name, sub := d.str(), d.str()
				r := newRecord(k)
				require.NotNil(t, r, "%v", k)
				r.decode(d)
				require.NoError(t, d.err, "%v", k)
				require.Empty(t, d.b, "%v: bytes left", k)
				enc := encoder{b: []byte{uint8(k)}}
				enc.str(name)
				enc.str(sub)
				r.encode(&enc)
				require.Equal(t, rec, enc.b, "%v of %s", k, pathOf(name, sub))
				seen[k]++
			}
		}
	}
	for k := recKind(1); int(k) < len(recNames); k++ {
		require.NotZero(t, seen[k], "no %v record in testdata/records", k)
	}
}

// An entity's state in a snapshot decodes to what was encoded.
func TestEntityStateRoundTrip(t *testing.T) {
	rule := RuleSpec{Name: "r", Filter: FilterCorrelation, Correlation: sqlfilter.CorrelationFields{Subject: "s"}, CorrelationProps: map[string]any{"k": "v"}}
	for _, st := range []entityState{
		{live: true, kind: KindQueue, name: "q", cfg: Config{LockDuration: time.Minute, RequiresSession: true, RequiresDuplicateDetection: true},
			created: 1, updated: 2, accessed: 3, lastActivity: 4, lastActivation: 5, seq: 6,
			dups:     []dupEntry{{id: "a", until: 7}, {id: "b", until: 8}},
			sessions: []sessionState{{id: "s", state: []byte("x")}, {id: "t", state: []byte{}, held: true, mode: ReceiveAndDelete, acceptedAt: 9, lockedUntil: 10}},
			msgs: []messageState{{q: store.Main, key: store.Key{Seq: 1}, state: store.Locked, due: 11, until: 12, m: testMessage(1)},
				{q: store.DeadLetterQueue, key: store.Key{Seq: 2, Copy: 1}, state: store.Available, due: store.Never, until: 0, m: testMessage(2)}},
			forwards: []*forward{{key: store.Key{Seq: 3}, to: "t", at: 13, order: 2, entered: true, m: testMessage(3)}}},
		{live: false, kind: KindSubscription, name: "s", seq: 1, rules: []RuleSpec{rule, {Name: "$Default", Filter: FilterTrue}}},
	} {
		var buf bytes.Buffer
		w := &snapWriter{w: &buf}
		st.encode(w)
		w.flush(0)
		require.NoError(t, w.err)
		var got entityState
		d := &decoder{b: buf.Bytes()}
		got.decode(d)
		require.NoError(t, d.err)
		require.Empty(t, d.b, "bytes left")
		require.Equal(t, st, got)
	}
}

// The entities of the snapshot in testdata/records (written before the
// state had a type) decode, and encode again to the same bytes.
func TestEntityStateFormatUnchanged(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "records", "snap", "*.snap"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	const header = 48 // the log's snapshot header, version 2
	body := data[header : header+int(binary.LittleEndian.Uint64(data[24:]))]
	d := &decoder{b: body}
	require.Equal(t, uint8(snapVersion), d.u8())
	entities := 0
	same := func() {
		start := d.b
		var st entityState
		st.decode(d)
		require.NoError(t, d.err)
		var buf bytes.Buffer
		w := &snapWriter{w: &buf}
		st.encode(w)
		w.flush(0)
		require.Equal(t, start[:len(start)-len(d.b)], buf.Bytes(), "entity %s", st.name)
		entities++
	}
	for d.u8() == 1 && d.err == nil {
		d.str()
		d.uvar()
		if d.boolean() {
			same()
			for range d.count() {
				same()
			}
		}
		for d.u8() == 1 && d.err == nil { // messages on their way from deleted entities
			d.u8()
			d.str()
			d.str()
			d.forward(nil)
		}
	}
	require.NoError(t, d.err)
	require.Empty(t, d.b)
	require.Greater(t, entities, 5)
}
