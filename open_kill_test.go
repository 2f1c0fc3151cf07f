package minibus_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/minibus-go/minibus"
	"github.com/stretchr/testify/require"
)

// The kill tests run a durable namespace in a child process, this test
// binary started again in a child role, and kill it with SIGKILL: what the
// child acknowledged, it wrote to its stdout, a pipe the parent reads; after
// the kill the parent opens the directory itself and checks that every
// acknowledgement holds (Open's promise, SEMANTICS L6 at Open). The
// parent's model and checks are in open_kill_check_test.go, the child's
// traffic in open_kill_child_test.go.
//
// The default run makes 8 cycles, a check that the loop works; CI runs 100
// (.ci/run), a soak many more:
//
//	go test -run '^TestKillLoop$' -v -kill.cycles=10000 -timeout=0 .

var (
	killCyclesFlag = flag.Int("kill.cycles", 0, "cycles of TestKillLoop; 0: 4, once through the sync modes (CI runs 100)")
	killSyncFlag   = flag.String("kill.sync", "", "sync mode of TestKillLoop's namespaces: always, batched or none; empty: a mix, always twice as often")
	killSeedFlag   = flag.Uint64("kill.seed", 0, "seed of TestKillLoop's kill moments and traffic; 0: from the time (logged)")
)

// The child's role and parameters come in the environment.
const (
	killEnvRole   = "MINIBUS_KILL_CHILD" // "loop" or "poison"
	killEnvDir    = "MINIBUS_KILL_DIR"
	killEnvSeed   = "MINIBUS_KILL_SEED"
	killEnvCycle  = "MINIBUS_KILL_CYCLE"
	killEnvSync   = "MINIBUS_KILL_SYNC"
	killEnvResend = "MINIBUS_KILL_RESEND" // dd bodies whose sends were acknowledged, to send again
)

// killOptions are the options of every Open of the kill tests: small
// segments and frequent snapshots, so that kills land in segment rolls and
// snapshots too.
func killOptions(mode minibus.SyncMode) []minibus.Option {
	return []minibus.Option{minibus.WithSync(mode), minibus.WithSegmentSize(64 << 10), minibus.WithCompactAfter(64 << 10)}
}

// killProc is a child process: this test binary run again in a child role.
type killProc struct {
	cmd    *exec.Cmd
	lines  chan string // the child's stdout, line by line; closed at its end
	stdin  io.Closer   // the child exits when it reads EOF: when the parent dies
	stderr bytes.Buffer
	once   sync.Once
	err    error // what Wait returned
}

// startKillProc runs the test named test again as a child with env added to
// its environment. The child is killed and waited for when t ends, at the
// latest.
func startKillProc(t *testing.T, test string, env ...string) *killProc {
	t.Helper()
	p := &killProc{cmd: exec.Command(os.Args[0], "-test.run=^"+test+"$"), lines: make(chan string, 64)}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	p.stdin, err = p.cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { p.kill(); p.wait() })
	return p
}

// kill sends SIGKILL, if the child still runs.
func (p *killProc) kill() { _ = p.cmd.Process.Kill() }

// wait reads what is left of the child's stdout, passing each line to fn
// (nil: dropped), and waits for the child to end. Only the first call waits.
func (p *killProc) wait(fn ...func(string)) {
	for line := range p.lines {
		for _, f := range fn {
			f(line)
		}
	}
	p.once.Do(func() {
		_ = p.stdin.Close()
		p.err = p.cmd.Wait()
	})
}

// TestKillLoop runs mixed traffic in a child process, kills it at a random
// moment, opens the directory and checks every acknowledgement, cycle after
// cycle on the same directory (see killModel for the rules).
func TestKillLoop(t *testing.T) {
	if role := os.Getenv(killEnvRole); role != "" {
		if role == "loop" {
			runKillTraffic()
		}
		return
	}
	t.Parallel() // its children run beside TestModel
	cycles := *killCyclesFlag
	if cycles == 0 {
		cycles = 4 // once through killModes; .ci/run passes 100
	}
	modes := killModes(t)
	seed := *killSeedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	l := newKillLoop(t, seed)
	for c := 1; c <= cycles; c++ {
		l.cycle(c, modes[c%len(modes)])
	}
	s := l.m.stats
	t.Logf("seed %d: %d cycles (%d killed within 40ms of the start, before or in Open), %d acknowledged sends checked, %d acknowledged completions checked (%d completes, %d receive-and-deletes, %d cancellations), %d dead-letters and defers, %d dropped resends, %d session states; lost 0, returned 0",
		seed, cycles, s.early, s.sends, s.completes+s.deletes+s.cancels, s.completes, s.deletes, s.cancels, s.moves, s.resends, s.states)
}

// killModes returns the sync modes the loop cycles through.
func killModes(t *testing.T) []minibus.SyncMode {
	switch *killSyncFlag {
	case "":
		return []minibus.SyncMode{minibus.SyncAlways, minibus.SyncBatched, minibus.SyncAlways, minibus.SyncNone}
	case "always":
		return []minibus.SyncMode{minibus.SyncAlways}
	case "batched":
		return []minibus.SyncMode{minibus.SyncBatched}
	case "none":
		return []minibus.SyncMode{minibus.SyncNone}
	}
	t.Fatalf("-kill.sync=%q: want always, batched or none", *killSyncFlag)
	return nil
}

// killLoop is the parent of TestKillLoop.
type killLoop struct {
	t    *testing.T
	dir  string
	seed uint64
	rng  *rand.Rand
	m    *killModel
}

func newKillLoop(t *testing.T, seed uint64) *killLoop {
	l := &killLoop{t: t, dir: t.TempDir(), seed: seed, rng: rand.New(rand.NewPCG(seed, 0)), m: newKillModel()}
	ns, err := minibus.Open(l.dir, killOptions(minibus.SyncAlways)...)
	require.NoError(t, err)
	require.NoError(t, createKillEntities(ns))
	require.NoError(t, ns.Close())
	return l
}

// createKillEntities creates what the child's traffic uses: "work" for
// peek-lock traffic and scheduled messages, "dd" with duplicate detection,
// read in receive-and-delete mode, topic "t" with subscriptions "all" and
// "red" (an SQL filter), and "sess" with sessions.
func createKillEntities(ns *minibus.Namespace) error {
	lock := time.Minute
	_, err1 := ns.CreateQueue("work", &minibus.QueueProperties{LockDuration: lock, MaxDeliveryCount: 10})
	_, err2 := ns.CreateQueue("dd", &minibus.QueueProperties{RequiresDuplicateDetection: true})
	_, err3 := ns.CreateQueue("sess", &minibus.QueueProperties{RequiresSession: true, LockDuration: lock})
	top, err4 := ns.CreateTopic("t", nil)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return err
	}
	_, err1 = top.CreateSubscription("all", &minibus.SubscriptionProperties{LockDuration: lock})
	_, err2 = top.CreateSubscription("red", &minibus.SubscriptionProperties{DefaultRule: &minibus.RuleProperties{Name: "red", Filter: minibus.SQLFilter{Expression: "color = 'red'"}}})
	return errors.Join(err1, err2)
}

// killPlan is when a cycle kills its child: early, after a delay from its
// start (most likely in Open); otherwise after acks acknowledgements or
// after delay from its "ready", whichever comes first.
type killPlan struct {
	early bool
	acks  int
	delay time.Duration
}

func (l *killLoop) plan() killPlan {
	if l.rng.IntN(10) == 0 {
		return killPlan{early: true, delay: time.Duration(l.rng.Int64N(int64(40 * time.Millisecond)))}
	}
	return killPlan{acks: 1 + l.rng.IntN(400), delay: time.Duration(l.rng.Int64N(int64(150 * time.Millisecond)))}
}

// cycle runs one child in mode, kills it as planned and checks.
func (l *killLoop) cycle(c int, mode minibus.SyncMode) {
	t := l.t
	l.m.begin(c)
	plan := l.plan()
	p := startKillProc(t, "TestKillLoop",
		killEnvRole+"=loop", killEnvDir+"="+l.dir, killEnvSeed+"="+fmt.Sprint(l.seed), killEnvCycle+"="+fmt.Sprint(c),
		killEnvSync+"="+fmt.Sprint(int(mode)), killEnvResend+"="+strings.Join(l.m.takeResends(), ","))
	where := fmt.Sprintf("seed %d cycle %d %v plan %+v", l.seed, c, mode, plan)
	n, err := l.watch(p, plan)
	p.wait(func(line string) { err = errors.Join(err, l.m.apply(line)) })
	if p.stderr.Len() > 0 {
		err = errors.Join(err, fmt.Errorf("child's stderr: %s", p.stderr.String()))
	}
	require.NoError(t, err, "%s: the child (after %d lines)", where, n)
	if plan.early {
		l.m.stats.early++
	}
	bad, err := l.check(mode)
	require.NoError(t, err, where)
	if len(bad) > 0 {
		t.Fatalf("%s, killed after %d lines:\n%s", where, n, strings.Join(bad[:min(len(bad), 30)], "\n"))
	}
}

// killHung is how long a child may take to say "ready".
const killHung = 30 * time.Second

// watch applies the child's lines to the model until the plan says kill,
// then kills the child, and returns how many lines it read.
func (l *killLoop) watch(p *killProc, plan killPlan) (int, error) {
	ready := plan.early
	timer := time.NewTimer(plan.delay)
	defer timer.Stop()
	if !ready {
		timer.Reset(killHung) // until "ready"
	}
	n := 0
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				return n, errors.New("the child ended before it was killed")
			}
			n++
			err := l.m.apply(line)
			if line == "ready" && !ready {
				ready = true
				timer.Reset(plan.delay)
			}
			if err != nil || !plan.early && n > plan.acks {
				p.kill()
				return n, err
			}
		case <-timer.C:
			p.kill()
			if !ready {
				return n, fmt.Errorf("the child was not ready after %v", killHung)
			}
			return n, nil
		}
	}
}

// check opens the directory on a clock stopped at now, reads everything,
// compares with the model and probes the sequence numbers; it returns what
// broke a promise.
func (l *killLoop) check(mode minibus.SyncMode) ([]string, error) {
	ctx := context.Background()
	mock := newStoppedClock()
	ns, err := minibus.Open(l.dir, append(killOptions(mode), minibus.WithClock(mock))...)
	if err != nil {
		return nil, fmt.Errorf("open after the kill: %w", err)
	}
	defer ns.Close()
	obs, err := observeKill(ctx, ns)
	if err != nil {
		return nil, err
	}
	bad := append(obs.bad, l.m.compare(obs, mock.Now())...)
	probes, err := probeKill(ctx, ns, mock.Now())
	if err != nil {
		return nil, err
	}
	bad = append(bad, l.m.probed(probes)...)
	l.m.rebuild(obs)
	return bad, ns.Close()
}

// newStoppedClock returns a mock clock at the real now: the parent's checks
// see one instant, so that nothing falls due between two reads.
func newStoppedClock() *clock.Mock {
	mock := clock.NewMock()
	mock.Set(time.Now())
	return mock
}

// TestKillPoisonMessageReachesTheDeadLetterQueue: a message that kills its
// consumer every time, right after it is received, reaches the dead-letter
// queue after MaxDeliveryCount restarts (SEMANTICS L6 at each Open). The
// consumer is a child process: killed by the parent, or exiting by itself.
func TestKillPoisonMessageReachesTheDeadLetterQueue(t *testing.T) {
	if role := os.Getenv(killEnvRole); role != "" {
		if role == "poison" {
			runPoisonConsumer()
		}
		return
	}
	t.Parallel()
	const maxDeliveries = 3
	ctx := context.Background()
	dir := t.TempDir()
	ns, err := minibus.Open(dir, killOptions(minibus.SyncAlways)...)
	require.NoError(t, err)
	q, err := ns.CreateQueue("poison", &minibus.QueueProperties{MaxDeliveryCount: maxDeliveries, LockDuration: 5 * time.Minute})
	require.NoError(t, err)
	require.NoError(t, q.SendMessage(ctx, &minibus.Message{Body: []byte("poison")}, nil))
	require.NoError(t, ns.Close())

	for i := 1; i <= maxDeliveries; i++ {
		p := startKillProc(t, "TestKillPoisonMessageReachesTheDeadLetterQueue", killEnvRole+"=poison", killEnvDir+"="+dir, killEnvCycle+"="+fmt.Sprint(i))
		select {
		case line := <-p.lines:
			require.Equal(t, fmt.Sprintf("got poison %d", i), line, "delivery %d", i)
		case <-time.After(killHung):
			t.Fatalf("delivery %d: the consumer received nothing in %v", i, killHung)
		}
		if i%2 == 1 {
			p.kill() // else it exits by itself
		}
		p.wait()
		require.Error(t, p.err, "the consumer died")
		require.Empty(t, p.stderr.String())

		main, dead := peekPoison(t, dir)
		if i < maxDeliveries {
			require.Empty(t, dead, "delivery %d", i)
			require.Len(t, main, 1, "delivery %d", i)
			require.EqualValues(t, i, main[0].DeliveryCount, "L6: the lock ended at the kill, its delivery counted")
			continue
		}
		require.Empty(t, main, "dead-lettered at the last Open")
		require.Len(t, dead, 1)
		require.Equal(t, minibus.DeadLetterReasonMaxDeliveryCountExceeded, dead[0].DeadLetterReason)
		require.EqualValues(t, maxDeliveries, dead[0].DeliveryCount)
		require.Equal(t, "poison", string(dead[0].Body))
	}
}

// peekPoison opens dir and peeks queue poison and its dead-letter queue,
// checking that RuntimeProperties count what it found.
func peekPoison(t *testing.T, dir string) (main, dead []*minibus.ReceivedMessage) {
	t.Helper()
	ns, err := minibus.Open(dir, killOptions(minibus.SyncAlways)...)
	require.NoError(t, err)
	defer ns.Close()
	q, err := ns.Queue("poison")
	require.NoError(t, err)
	for sub, msgs := range map[minibus.SubQueue]*[]*minibus.ReceivedMessage{minibus.SubQueueNone: &main, minibus.SubQueueDeadLetter: &dead} {
		r, err := q.NewReceiver(&minibus.ReceiverOptions{SubQueue: sub})
		require.NoError(t, err)
		*msgs, err = peekKill(context.Background(), r)
		require.NoError(t, err)
	}
	rt := q.RuntimeProperties()
	require.Equal(t, [3]int64{int64(len(main)), int64(len(dead)), int64(len(main) + len(dead))},
		[3]int64{rt.ActiveMessageCount, rt.DeadLetterMessageCount, rt.TotalMessageCount}, "active, dead-lettered, total")
	return main, dead
}

// runPoisonConsumer is the child of
// TestKillPoisonMessageReachesTheDeadLetterQueue: it receives the poison
// message, says so, and dies with it: it waits to be killed, or, every
// second time, exits at once.
func runPoisonConsumer() {
	time.AfterFunc(time.Minute, func() { os.Exit(2) })
	ns, err := minibus.Open(os.Getenv(killEnvDir), killOptions(minibus.SyncAlways)...)
	killMust(err, "open")
	q, err := ns.Queue("poison")
	killMust(err, "queue")
	r, err := q.NewReceiver(nil)
	killMust(err, "receiver")
	msgs, err := r.ReceiveMessages(killCtx, 1, nil)
	killMust(err, "receive")
	killSay("got %s %d", msgs[0].Body, msgs[0].DeliveryCount)
	if n, _ := strconv.Atoi(os.Getenv(killEnvCycle)); n%2 == 0 {
		os.Exit(3)
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}
