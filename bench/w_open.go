package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/minibus-go/minibus"
)

// openRepeats is how many times D7 times each kind of open in one run; the
// run reports their median.
const openRepeats = 3

// openBuilders and openBatch are how D7 fills its store: four producers
// sending 256 messages a call.
const (
	openBuilders = 4
	openBatch    = 256
)

// D7 builds a durable store of 1,000,000 messages, then times minibus.Open
// of it: closed, cold, after a crash, drained by a later session; and of a
// store left empty by the same number of messages sent and received.
func D7() *Workload {
	return &Workload{
		ID:    "D7",
		Title: "open a store of 1,000,000 messages",
		Method: "minibus only. Build: minibus.Open of a fresh directory (the peer's sync mode), one queue, " +
			"four producers sending the messages in calls of 256 (1 KiB bodies); a copy of the directory taken " +
			"while the namespace is still open (what a kill -9 after the last acknowledgement leaves, the page " +
			"cache surviving); Close, which takes a snapshot only if the log has grown by more than the last " +
			"snapshot's size since it. Each open is minibus.Open up to its return, then checked (the queue's " +
			"message count) and closed, unmeasured; each kind is timed 3 times per run and the run reports the " +
			"median. open: the closed store, its files in the page cache. cold: the same after writing out and " +
			"dropping every file of the store from the page cache (posix_fadvise DONTNEED, which needs no root; " +
			"drop_caches would drop every other process's cache too); below the kernel the disk may still be " +
			"cached (a hypervisor's). crash: the copy, replayed from its newest periodic snapshot. disk: the " +
			"store's allocated size after Close, and over the bodies' size (live). drained: the same store after " +
			"a later session received and deleted every message (receive-and-delete, up to 1000 a call) and " +
			"closed. empty: a fresh store through which one session sent the messages (calls of 256) while " +
			"receiving and deleting them, the queue staying shallow, then closed: a namespace that had traffic " +
			"and is now empty.",
		N: 1_000_000, MinN: 1_000,
		Peers: []Peer{MinibusDurablePeer{Sync: minibus.SyncNone}},
		Columns: []Column{
			{Key: "build msgs/s", Header: "build msgs/s", Kind: Rate},
			{Key: "close ms", Header: "close ms", Kind: Millis, LowerIsBetter: true},
			{Key: "open ms", Header: "open ms", Kind: Millis, LowerIsBetter: true},
			{Key: "cold ms", Header: "cold ms", Kind: Millis, LowerIsBetter: true},
			{Key: "crash ms", Header: "crash ms", Kind: Millis, LowerIsBetter: true},
			{Key: "disk MiB", Header: "disk MiB", Kind: Mebibytes, LowerIsBetter: true},
			{Key: "disk/live", Header: "disk / live", Kind: Ratio, LowerIsBetter: true},
			{Key: "drained open ms", Header: "drained open ms", Kind: Millis, LowerIsBetter: true},
			{Key: "drained disk MiB", Header: "drained disk MiB", Kind: Mebibytes, LowerIsBetter: true},
			{Key: "empty open ms", Header: "empty open ms", Kind: Millis, LowerIsBetter: true},
			{Key: "empty cold ms", Header: "empty cold ms", Kind: Millis, LowerIsBetter: true},
			{Key: "empty disk MiB", Header: "empty disk MiB", Kind: Mebibytes, LowerIsBetter: true},
		},
		Run: runOpen,
	}
}

func runOpen(ctx context.Context, env *Env, p Peer) (Metrics, error) {
	mp, ok := p.(MinibusDurablePeer)
	if !ok {
		return nil, fmt.Errorf("D7 opens minibus stores only: %w", ErrNotSupported)
	}
	opts := []minibus.Option{minibus.WithSync(mp.Sync)}
	parent, err := os.MkdirTemp(env.Dir, "minibus-bench-open-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(parent)
	dir, crashDir := filepath.Join(parent, "store"), filepath.Join(parent, "crash")
	n := env.N
	m := Metrics{}

	// Build, copy the open store, close.
	ns, err := minibus.Open(dir, opts...)
	if err != nil {
		return nil, err
	}
	build, err := fillStore(ctx, env, ns, n)
	if err == nil {
		env.quiet(func() { err = copyOpenStore(dir, crashDir) })
	}
	start := time.Now()
	if cerr := ns.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	m["close ms"] = millis(time.Since(start))
	m["build msgs/s"] = rate(n, build)
	disk, err := diskUse(dir)
	if err != nil {
		return nil, err
	}
	m["disk MiB"] = float64(disk) / (1 << 20)
	m["disk/live"] = float64(disk) / float64(n*BodySize)

	// The opens of the full store.
	for _, o := range []struct {
		key  string
		dir  string
		cold bool
	}{{"open ms", dir, false}, {"cold ms", dir, true}, {"crash ms", crashDir, false}} {
		d, err := medianOpen(env, o.dir, opts, n, o.cold)
		if errors.Is(err, ErrNotSupported) {
			continue // no cold opens here: the report shows —
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.key, err)
		}
		m[o.key] = millis(d)
	}
	if err := os.RemoveAll(crashDir); err != nil {
		return nil, err
	}

	// The same store emptied in a later session: receive-and-delete it all.
	if err := drainStore(ctx, env, dir, opts, n); err != nil {
		return nil, err
	}
	if disk, err = diskUse(dir); err != nil {
		return nil, err
	}
	m["drained disk MiB"] = float64(disk) / (1 << 20)
	d, err := medianOpen(env, dir, opts, 0, false)
	if err != nil {
		return nil, fmt.Errorf("drained open ms: %w", err)
	}
	m["drained open ms"] = millis(d)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}

	// A store whose traffic, n messages sent and received in one session,
	// left it empty, then closed.
	if err := steadyTraffic(ctx, env, dir, opts, n); err != nil {
		return nil, err
	}
	if disk, err = diskUse(dir); err != nil {
		return nil, err
	}
	m["empty disk MiB"] = float64(disk) / (1 << 20)
	for _, o := range []struct {
		key  string
		cold bool
	}{{"empty open ms", false}, {"empty cold ms", true}} {
		d, err := medianOpen(env, dir, opts, 0, o.cold)
		if errors.Is(err, ErrNotSupported) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.key, err)
		}
		m[o.key] = millis(d)
	}
	return m, nil
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fillStore creates the queue "bench" in ns and sends it n fresh 1 KiB
// messages from openBuilders goroutines in calls of up to openBatch. It
// returns how long the sends took.
func fillStore(ctx context.Context, env *Env, ns *minibus.Namespace, n int) (time.Duration, error) {
	q, err := ns.CreateQueue("bench", &minibus.QueueProperties{MaxSizeInMegabytes: minibusMaxSizeMB})
	if err != nil {
		return 0, err
	}
	var next atomic.Int64
	g, gctx := newGroup(ctx)
	start := time.Now()
	for range openBuilders {
		g.Go(func() error {
			for {
				first := int(next.Add(openBatch)) - openBatch
				if first >= n {
					return nil
				}
				msgs := make([]*minibus.Message, min(openBatch, n-first))
				for i := range msgs {
					msgs[i] = &minibus.Message{Body: newBody(first + i)}
				}
				if err := q.SendMessages(gctx, msgs, nil); err != nil {
					return err
				}
				env.tick(len(msgs))
			}
		})
	}
	err = g.Wait()
	return time.Since(start), err
}

// steadyTraffic opens dir, a fresh directory, and sends n messages to a
// new queue in calls of openBatch from one producer while one consumer
// receives and deletes them, up to 1000 a call, so that the queue stays
// shallow; then checks that none is left and closes it.
func steadyTraffic(ctx context.Context, env *Env, dir string, opts []minibus.Option, n int) error {
	ns, err := minibus.Open(dir, opts...)
	if err != nil {
		return err
	}
	err = func() error {
		q, err := ns.CreateQueue("bench", &minibus.QueueProperties{MaxSizeInMegabytes: minibusMaxSizeMB})
		if err != nil {
			return err
		}
		r, err := q.NewReceiver(&minibus.ReceiverOptions{ReceiveMode: minibus.ReceiveModeReceiveAndDelete})
		if err != nil {
			return err
		}
		defer r.Close(ctx)
		g, gctx := newGroup(ctx)
		g.Go(func() error {
			for first := 0; first < n; first += openBatch {
				msgs := make([]*minibus.Message, min(openBatch, n-first))
				for i := range msgs {
					msgs[i] = &minibus.Message{Body: newBody(first + i)}
				}
				if err := q.SendMessages(gctx, msgs, nil); err != nil {
					return err
				}
			}
			return nil
		})
		g.Go(func() error { return receiveAndDelete(gctx, env, r, n) })
		if err := g.Wait(); err != nil {
			return err
		}
		return checkMinibusCount(q, 0)
	}()
	return errors.Join(err, ns.Close())
}

// receiveAndDelete receives n messages from r, a receive-and-delete
// receiver, up to 1000 a call.
func receiveAndDelete(ctx context.Context, env *Env, r *minibus.Receiver, n int) error {
	for got := 0; got < n; {
		msgs, err := r.ReceiveMessages(ctx, 1000, nil)
		if err != nil {
			return fmt.Errorf("received %d of %d: %w", got, n, err)
		}
		got += len(msgs)
		env.tick(len(msgs))
	}
	return nil
}

// drainStore opens dir, receives and deletes its n messages, up to 1000 a
// call, checks that none is left and closes it.
func drainStore(ctx context.Context, env *Env, dir string, opts []minibus.Option, n int) error {
	ns, err := minibus.Open(dir, opts...)
	if err != nil {
		return err
	}
	err = func() error {
		q, err := ns.Queue("bench")
		if err != nil {
			return err
		}
		r, err := q.NewReceiver(&minibus.ReceiverOptions{ReceiveMode: minibus.ReceiveModeReceiveAndDelete})
		if err != nil {
			return err
		}
		defer r.Close(ctx)
		if err := receiveAndDelete(ctx, env, r, n); err != nil {
			return err
		}
		return checkMinibusCount(q, 0)
	}()
	return errors.Join(err, ns.Close())
}

// medianOpen times minibus.Open of dir openRepeats times, after dropping
// the store's files from the page cache each time if cold (ErrNotSupported
// where that cannot be done). Each open is checked to hold want messages
// and closed, unmeasured. It returns the median.
func medianOpen(env *Env, dir string, opts []minibus.Option, want int, cold bool) (time.Duration, error) {
	var ds []time.Duration
	for range openRepeats {
		var d time.Duration
		var err error
		env.quiet(func() {
			if cold {
				if err = dropCache(dir); err != nil {
					return
				}
			}
			d, err = timeOpen(dir, opts, want)
		})
		if err != nil {
			return 0, err
		}
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

// timeOpen times one minibus.Open of dir, then checks that its queue holds
// want messages and closes it.
func timeOpen(dir string, opts []minibus.Option, want int) (time.Duration, error) {
	start := time.Now()
	ns, err := minibus.Open(dir, opts...)
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	q, err := ns.Queue("bench")
	if err == nil {
		err = checkMinibusCount(q, want)
	}
	return d, errors.Join(err, ns.Close())
}

// checkMinibusCount compares the messages q holds with want.
func checkMinibusCount(q *minibus.Queue, want int) error {
	if got := q.RuntimeProperties().ActiveMessageCount; got != int64(want) {
		return fmt.Errorf("bench: the queue holds %d messages, want %d", got, want)
	}
	return nil
}

// diskUse is the disk the files under dir take.
func diskUse(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		total += allocated(fi)
		return nil
	})
	return total, err
}

// dropCache drops every file of dir from the page cache (dropFileCache).
func dropCache(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			if err := dropFileCache(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyOpenStore copies the files of src, a store that a namespace holds
// open with no call under way, to dst: the image a crash would leave. The
// namespace's snapshotter may take a snapshot meanwhile and remove the
// segments it covers, so the copy is retried until the names in src are
// the same before and after it.
func copyOpenStore(src, dst string) error {
	for range 10 {
		before, err := fileNames(src)
		if err != nil {
			return err
		}
		if err := os.RemoveAll(dst); err != nil {
			return err
		}
		if err := os.Mkdir(dst, 0o755); err != nil {
			return err
		}
		err = copyFiles(src, dst, before)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed under us: again
		}
		if err != nil {
			return err
		}
		after, err := fileNames(src)
		if err != nil {
			return err
		}
		if slices.Equal(before, after) {
			return nil
		}
	}
	return fmt.Errorf("bench: %s kept changing while copied", src)
}

// fileNames lists the regular files of dir, sorted.
func fileNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

func copyFiles(src, dst string, names []string) error {
	for _, name := range names {
		if err := copyFile(filepath.Join(src, name), filepath.Join(dst, name)); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}
