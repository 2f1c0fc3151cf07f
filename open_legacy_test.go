package minibus_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// Directories written by the code before the log had a manifest (format
// version 1 of segments and snapshots, testdata/legacy-v1, made by
// generate.go.txt there) open as that code opened them: the same entities,
// messages and session states (expected.txt, which that code wrote). Open
// then writes the manifest, and the next Open reads both versions.
func TestOpenReadsADirectoryWrittenBeforeManifests(t *testing.T) {
	for _, name := range []string{"crashed", "closed", "nosnap"} {
		t.Run(name, func(t *testing.T) {
			src := filepath.Join("testdata", "legacy-v1", name)
			want, err := os.ReadFile(filepath.Join(src, "expected.txt"))
			require.NoError(t, err)
			dir := copyLegacy(t, src)
			require.NoFileExists(t, filepath.Join(dir, "MANIFEST"))
			got, _ := openLegacy(t, dir)
			require.Equal(t, string(want), got)
			require.FileExists(t, filepath.Join(dir, "MANIFEST"))
			got, _ = openLegacy(t, dir)
			require.Equal(t, string(want), got, "again, with the manifest")
		})
	}
}

// The old code's clean Close left the last segment with records the
// snapshot holds: one of them damaged does not fail the Open.
func TestOpenSkipsADamagedRecordTheSnapshotHolds(t *testing.T) {
	src := filepath.Join("testdata", "legacy-v1", "closed")
	want, err := os.ReadFile(filepath.Join(src, "expected.txt"))
	require.NoError(t, err)
	dir := copyLegacy(t, src)
	seg := filepath.Join(dir, "0000000000000004-000000000000005c.wal")
	data, err := os.ReadFile(seg)
	require.NoError(t, err)
	last := lastRecordOffset(t, data)
	data[last+8+4] ^= 0xff // in the last record's payload
	require.NoError(t, os.WriteFile(seg, data, 0o600))
	got, logged := openLegacy(t, dir)
	require.Equal(t, string(want), got)
	require.Contains(t, logged, "skipped damaged records")
}

// recordOffsets returns where each record of a segment's data starts:
// frames of a length, a CRC and the payload padded to 8 bytes, after a
// 40-byte header, up to a zero length.
func recordOffsets(t *testing.T, data []byte) []int {
	var offs []int
	for off := 40; off+8 <= len(data); {
		n := int(data[off]) | int(data[off+1])<<8 | int(data[off+2])<<16 | int(data[off+3])<<24
		if n == 0 {
			break
		}
		offs = append(offs, off)
		off += 8 + (n+7)&^7
	}
	return offs
}

// lastRecordOffset returns where the last record of a segment's data
// starts.
func lastRecordOffset(t *testing.T, data []byte) int {
	offs := recordOffsets(t, data)
	require.NotEmpty(t, offs)
	return offs[len(offs)-1]
}

// copyLegacy copies a testdata directory to a new temporary one.
func copyLegacy(t *testing.T, src string) string {
	dir := t.TempDir()
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		if e.Name() == "expected.txt" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o600))
	}
	return dir
}

// openLegacy opens dir at the instant expected.txt was read, summarizes
// it and closes it; it returns the summary and what the namespace logged.
func openLegacy(t *testing.T, dir string) (summary, logged string) {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 1, 1, 0, 2, 0, 0, time.UTC))
	logger, buf := debugLogger()
	ns, err := minibus.Open(dir, minibus.WithClock(mock), minibus.WithSegmentSize(4096), minibus.WithLogger(logger))
	require.NoError(t, err)
	summary = summarizeLegacy(t, ns)
	require.NoError(t, ns.Close())
	return summary, buf.String()
}

// summarizeLegacy describes the namespace of the legacy directory as a
// test can compare it: every entity's counts and every message a peek
// finds, with its fields, and the session states. The code that wrote the
// directory wrote its expected.txt with the same function.
func summarizeLegacy(t *testing.T, ns *minibus.Namespace) string {
	ctx := context.Background()
	var b strings.Builder
	peek := func(name string, r interface {
		PeekMessages(context.Context, int, *minibus.PeekMessagesOptions) ([]*minibus.ReceivedMessage, error)
	}) {
		msgs, err := r.PeekMessages(ctx, 1000, &minibus.PeekMessagesOptions{FromSequenceNumber: 1})
		require.NoError(t, err)
		for _, m := range msgs {
			keys := make([]string, 0, len(m.ApplicationProperties))
			for k := range m.ApplicationProperties {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var props []string
			for _, k := range keys {
				props = append(props, fmt.Sprintf("%s=%v", k, m.ApplicationProperties[k]))
			}
			body := string(m.Body)
			if len(body) > 12 {
				body = fmt.Sprintf("%s...(%d bytes)", body[:12], len(m.Body))
			}
			fmt.Fprintf(&b, "%s #%d %q id=%s session=%s deliveries=%d state=%v enqueued=%s expires=%s dl=%q/%q props=%v\n",
				name, m.SequenceNumber, body, m.MessageID, m.SessionID, m.DeliveryCount, m.State,
				m.EnqueuedTime.UTC().Format(time.RFC3339Nano), m.ExpiresAt.UTC().Format(time.RFC3339Nano),
				m.DeadLetterReason, m.DeadLetterErrorDescription, props)
		}
	}
	for _, name := range []string{"orders"} {
		q, err := ns.Queue(name)
		require.NoError(t, err)
		p := q.RuntimeProperties()
		fmt.Fprintf(&b, "%s active=%d dl=%d scheduled=%d transfer=%d size=%d\n", name, p.ActiveMessageCount, p.DeadLetterMessageCount, p.ScheduledMessageCount, p.TransferDeadLetterMessageCount, p.SizeInBytes)
		r, err := q.NewReceiver(nil)
		require.NoError(t, err)
		peek(name, r)
		dl, err := q.NewReceiver(&minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
		require.NoError(t, err)
		peek(name+"/$DeadLetterQueue", dl)
	}
	q, err := ns.Queue("sessions")
	require.NoError(t, err)
	p := q.RuntimeProperties()
	fmt.Fprintf(&b, "sessions active=%d\n", p.ActiveMessageCount) // not its size: session state may count in it
	for _, id := range []string{"s0", "s1"} {
		s, err := q.AcceptSession(ctx, id, nil)
		require.NoError(t, err)
		state, err := s.GetSessionState(ctx, nil)
		require.NoError(t, err)
		fmt.Fprintf(&b, "session %s state=%q\n", id, state)
		peek("sessions/"+id, s)
		require.NoError(t, s.Close(ctx))
	}
	top, err := ns.Topic("events")
	require.NoError(t, err)
	for _, name := range []string{"all", "eu"} {
		s, err := top.Subscription(name)
		require.NoError(t, err)
		sp := s.RuntimeProperties()
		fmt.Fprintf(&b, "events/%s active=%d rules=%v\n", name, sp.ActiveMessageCount, len(s.Rules()))
		r, err := s.NewReceiver(nil)
		require.NoError(t, err)
		peek("events/"+name, r)
	}
	return b.String()
}
