package minibus_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minibus-go/minibus"
)

// The child of TestKillLoop: mixed traffic from several goroutines, one
// line to the parent per acknowledgement.

// killOut serializes the child's lines: each is one write to the pipe.
var killOut sync.Mutex

// killSay writes one line to the parent. A parent that is gone ends the
// child.
func killSay(format string, args ...any) {
	line := fmt.Sprintf(format, args...) + "\n"
	killOut.Lock()
	defer killOut.Unlock()
	if _, err := os.Stdout.WriteString(line); err != nil {
		os.Exit(1)
	}
}

// killMust ends the child with a line saying what failed, unless err is nil.
func killMust(err error, what string) {
	if err != nil {
		killSay("E %s: %v", what, err)
		os.Exit(1)
	}
}

// killTraffic is the child's namespace and its traffic's shared state.
type killTraffic struct {
	cycle  int
	seed   uint64
	resend []string
	work   *minibus.Queue
	dd     *minibus.Queue
	sess   *minibus.Queue
	topic  *minibus.Topic
	all    *minibus.Subscription
	red    *minibus.Subscription
	// credit bounds, per producer, the messages in its main queue (work,
	// dd, all, sess), so that nothing piles up cycle after cycle: a send
	// takes one, a settlement that takes the message out of the main queue
	// gives one back; wake tells a receive-and-delete consumer that
	// something was sent.
	credit map[string]chan struct{}
	wake   map[string]chan struct{}

	mu       sync.Mutex
	deferred []int64 // work's deferred messages, to fetch
}

// runKillTraffic is the child of TestKillLoop: it opens the directory in
// the environment and runs traffic from several goroutines, writing a line
// per acknowledgement, until it is killed. It exits by itself only when its
// parent is gone (stdin ends) or after a minute.
func runKillTraffic() {
	time.AfterFunc(time.Minute, func() { os.Exit(2) })
	c := &killTraffic{credit: map[string]chan struct{}{}, wake: map[string]chan struct{}{}}
	for _, code := range []string{"w", "d", "t", "s"} {
		c.credit[code], c.wake[code] = make(chan struct{}, 32), make(chan struct{}, 1)
	}
	mode, err1 := strconv.Atoi(os.Getenv(killEnvSync))
	cycle, err2 := strconv.Atoi(os.Getenv(killEnvCycle))
	seed, err3 := strconv.ParseUint(os.Getenv(killEnvSeed), 10, 64)
	killMust(errors.Join(err1, err2, err3), "environment")
	c.cycle, c.seed = cycle, seed
	if r := os.Getenv(killEnvResend); r != "" {
		c.resend = strings.Split(r, ",")
	}
	ns, err := minibus.Open(os.Getenv(killEnvDir), killOptions(minibus.SyncMode(mode))...)
	killMust(err, "open")
	killMust(c.handles(ns), "handles")
	c.start()
	killSay("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// handles gets the entities and the numbers of work's deferred messages.
func (c *killTraffic) handles(ns *minibus.Namespace) error {
	var errs [7]error
	c.work, errs[0] = ns.Queue("work")
	c.dd, errs[1] = ns.Queue("dd")
	c.sess, errs[2] = ns.Queue("sess")
	c.topic, errs[3] = ns.Topic("t")
	if err := errors.Join(errs[:]...); err != nil {
		return err
	}
	c.all, errs[4] = c.topic.Subscription("all")
	c.red, errs[5] = c.topic.Subscription("red")
	r, err := c.work.NewReceiver(nil)
	if err != nil {
		return err
	}
	var msgs []*minibus.ReceivedMessage
	msgs, errs[6] = peekKill(context.Background(), r)
	for _, m := range msgs {
		if m.State == minibus.MessageStateDeferred {
			c.deferred = append(c.deferred, m.SequenceNumber)
		}
	}
	if err := errors.Join(errs[:]...); err != nil {
		return err
	}
	// What earlier cycles left takes credits.
	backlog := map[string]int64{
		"w": int64(len(msgs) - len(c.deferred)), "d": c.dd.RuntimeProperties().ActiveMessageCount,
		"t": c.all.RuntimeProperties().ActiveMessageCount, "s": c.sess.RuntimeProperties().ActiveMessageCount,
	}
	for code, n := range backlog {
		for range min(n, int64(cap(c.credit[code]))) {
			c.credit[code] <- struct{}{}
		}
	}
	return nil
}

// killWorker is one goroutine of the traffic.
type killWorker struct {
	*killTraffic
	g   int
	n   int
	rng *rand.Rand
}

// body returns a new unique body: cycle, goroutine, count.
func (w *killWorker) body() string {
	w.n++
	return fmt.Sprintf("%d.%d.%d", w.cycle, w.g, w.n)
}

// start starts the goroutines; they run until the process ends.
func (c *killTraffic) start() {
	workers := []func(*killWorker){
		(*killWorker).produceWork, (*killWorker).produceDD, (*killWorker).produceTopic, (*killWorker).produceSessions,
		(*killWorker).consumeWork, (*killWorker).consumeWork, (*killWorker).drainWorkDLQ, (*killWorker).consumeSessions,
		(*killWorker).consumeAll, killDeleting("d"), killDeleting("tr"), killDeleting("ta"),
	}
	for g, run := range workers {
		w := &killWorker{killTraffic: c, g: g, rng: rand.New(rand.NewPCG(c.seed, uint64(c.cycle)<<8|uint64(g)))}
		go run(w)
	}
}

var killCtx = context.Background()

// take waits for n credits of code's producer; give returns one.
func (c *killTraffic) take(code string, n int) {
	for range n {
		c.credit[code] <- struct{}{}
	}
}

func (c *killTraffic) give(code string) {
	select {
	case <-c.credit[code]:
	default: // a message of an earlier cycle
	}
}

// poke wakes code's receive-and-delete consumer.
func (c *killTraffic) poke(code string) {
	select {
	case c.wake[code] <- struct{}{}:
	default:
	}
}

// produceWork sends to work, one message or a batch, and schedules
// messages, cancelling some at once.
func (w *killWorker) produceWork() {
	for {
		n := 1 + w.rng.IntN(4)
		bodies := make([]string, n)
		msgs := make([]*minibus.Message, n)
		for i := range msgs {
			bodies[i] = w.body()
			msgs[i] = &minibus.Message{Body: []byte(bodies[i])}
		}
		w.take("w", n)
		switch x := w.rng.IntN(10); {
		case x < 3:
			w.schedule(bodies, msgs)
		case n == 1:
			killMust(w.work.SendMessage(killCtx, msgs[0], nil), "send work")
			killSay("S w %s", bodies[0])
		default:
			killMust(w.work.SendMessages(killCtx, msgs, nil), "send work batch")
			killSay("S w %s", strings.Join(bodies, " "))
		}
	}
}

// schedule schedules msgs within 600ms and cancels them at once one time in
// three; if they are due already the cancellation finds nothing.
func (w *killWorker) schedule(bodies []string, msgs []*minibus.Message) {
	at := time.Now().Add(time.Duration(w.rng.Int64N(int64(600 * time.Millisecond))))
	seqs, err := w.work.ScheduleMessages(killCtx, msgs, at, nil)
	killMust(err, "schedule")
	fields := make([]string, len(seqs))
	for i, s := range seqs {
		fields[i] = fmt.Sprintf("%d:%s", s, bodies[i])
	}
	killSay("SC w %s", strings.Join(fields, " "))
	if w.rng.IntN(3) != 0 {
		return
	}
	for _, b := range bodies {
		killSay("C? w %s", b)
	}
	err = w.work.CancelScheduledMessages(killCtx, seqs, nil)
	for i, b := range bodies {
		switch {
		case err == nil:
			killSay("K w %s %d", b, seqs[i])
			w.give("w")
		case errors.Is(err, minibus.ErrMessageNotFound):
			killSay("N w %s", b)
		default:
			killMust(err, "cancel")
		}
	}
}

// produceDD sends to dd with MessageIDs, and sends again, under new
// bodies, MessageIDs whose sends were acknowledged: first those of the last
// cycle, then its own.
func (w *killWorker) produceDD() {
	for _, orig := range w.resend {
		w.resendDD(orig)
	}
	var acked []string
	for {
		if w.rng.IntN(6) == 0 && len(acked) > 0 {
			w.resendDD(acked[w.rng.IntN(len(acked))])
			continue
		}
		n := 1 + w.rng.IntN(3)
		bodies := make([]string, n)
		msgs := make([]*minibus.Message, n)
		for i := range msgs {
			bodies[i] = w.body()
			msgs[i] = &minibus.Message{MessageID: "m" + bodies[i], Body: []byte(bodies[i])}
		}
		w.take("d", n)
		killMust(w.dd.SendMessages(killCtx, msgs, nil), "send dd")
		killSay("S d %s", strings.Join(bodies, " "))
		w.poke("d")
		acked = append(acked[max(0, len(acked)-15):], bodies...)
	}
}

// resendDD sends orig's MessageID again with a new body, which duplicate
// detection drops.
func (w *killWorker) resendDD(orig string) {
	b := w.body()
	killSay("U? d %s %s", b, orig)
	killMust(w.dd.SendMessage(killCtx, &minibus.Message{MessageID: "m" + orig, Body: []byte(b)}, nil), "resend dd")
	killSay("U d %s", b)
}

// produceTopic sends to the topic, red and blue messages; a red one's body
// ends in 'r'.
func (w *killWorker) produceTopic() {
	for {
		n := 1 + w.rng.IntN(3)
		bodies := make([]string, n)
		msgs := make([]*minibus.Message, n)
		for i := range msgs {
			color := [...]string{"red", "blue"}[w.rng.IntN(2)]
			bodies[i] = w.body() + color[:1]
			msgs[i] = &minibus.Message{Body: []byte(bodies[i]), ApplicationProperties: map[string]any{"color": color}}
		}
		w.take("t", n)
		killMust(w.topic.SendMessages(killCtx, msgs, nil), "send topic")
		killSay("S t %s", strings.Join(bodies, " "))
		w.poke("t")
	}
}

// produceSessions sends to sess, in sessions s0 to s3; a body ends in its
// session.
func (w *killWorker) produceSessions() {
	for {
		n := 1 + w.rng.IntN(3)
		bodies := make([]string, n)
		msgs := make([]*minibus.Message, n)
		for i := range msgs {
			sid := fmt.Sprintf("s%d", w.rng.IntN(4))
			bodies[i] = w.body() + "-" + sid
			msgs[i] = &minibus.Message{Body: []byte(bodies[i]), SessionID: sid}
		}
		w.take("s", n)
		killMust(w.sess.SendMessages(killCtx, msgs, nil), "send sess")
		killSay("S s %s", strings.Join(bodies, " "))
	}
}

// killSettler settles messages: a receiver or a session receiver.
type killSettler interface {
	CompleteMessage(context.Context, *minibus.ReceivedMessage, *minibus.CompleteMessageOptions) error
	AbandonMessage(context.Context, *minibus.ReceivedMessage, *minibus.AbandonMessageOptions) error
	DeadLetterMessage(context.Context, *minibus.ReceivedMessage, *minibus.DeadLetterOptions) error
	DeferMessage(context.Context, *minibus.ReceivedMessage, *minibus.DeferMessageOptions) error
}

// complete completes m, a message of code, saying so before and after.
func (w *killWorker) complete(r killSettler, code string, m *minibus.ReceivedMessage) {
	killSay("C? %s %s", code, m.Body)
	killMust(r.CompleteMessage(killCtx, m, nil), "complete "+code)
	killSay("C %s %s %d", code, m.Body, m.SequenceNumber)
}

// settle settles m, a peek-lock message of code: it completes, abandons,
// defers, dead-letters or keeps it locked until the kill, by the weights.
func (w *killWorker) settle(r killSettler, code string, m *minibus.ReceivedMessage, weights [4]int) {
	x := w.rng.IntN(100)
	switch {
	case x < weights[0]:
		w.complete(r, code, m)
		w.give(numbering(code))
	case x < weights[1]:
		killMust(r.AbandonMessage(killCtx, m, nil), "abandon "+code)
	case x < weights[2]:
		killMust(r.DeferMessage(killCtx, m, nil), "defer "+code)
		killSay("F %s %s %d", code, m.Body, m.SequenceNumber)
		w.mu.Lock()
		w.deferred = append(w.deferred, m.SequenceNumber)
		w.mu.Unlock()
		w.give(numbering(code))
	case x < weights[3]:
		killMust(r.DeadLetterMessage(killCtx, m, &minibus.DeadLetterOptions{Reason: "kill test"}), "dead-letter "+code)
		killSay("L %s %s %d", code, m.Body, m.SequenceNumber)
		w.give(numbering(code))
	default: // locked until the kill; Open ends the lock, its delivery counted (L6)
		killSay("H %s %s %d %d", code, m.Body, m.SequenceNumber, m.DeliveryCount)
		w.give(numbering(code))
	}
}

// consumeWork receives from work in peek-lock mode and settles every way,
// and fetches and completes the deferred messages.
func (w *killWorker) consumeWork() {
	r, err := w.work.NewReceiver(nil)
	killMust(err, "receiver")
	for {
		w.fetchDeferred(r)
		msgs, err := r.ReceiveMessages(killCtx, 4, &minibus.ReceiveMessagesOptions{MaxWaitTime: 20 * time.Millisecond})
		killMust(err, "receive work")
		for _, m := range msgs {
			w.settle(r, "w", m, [4]int{55, 70, 82, 92})
		}
	}
}

// fetchDeferred receives up to three deferred messages of work and
// completes them.
func (w *killWorker) fetchDeferred(r *minibus.Receiver) {
	w.mu.Lock()
	n := min(3, len(w.deferred))
	seqs := append([]int64(nil), w.deferred[:n]...)
	w.deferred = w.deferred[n:]
	w.mu.Unlock()
	if n == 0 {
		return
	}
	msgs, err := r.ReceiveDeferredMessages(killCtx, seqs, nil)
	killMust(err, fmt.Sprint("receive deferred ", seqs))
	for _, m := range msgs {
		w.complete(r, "w", m)
	}
}

// drainWorkDLQ completes the messages of work's dead-letter queue.
func (w *killWorker) drainWorkDLQ() {
	r, err := w.work.NewReceiver(&minibus.ReceiverOptions{SubQueue: minibus.SubQueueDeadLetter})
	killMust(err, "receiver")
	for {
		msgs, err := r.ReceiveMessages(killCtx, 4, nil)
		killMust(err, "receive work's dead letters")
		for _, m := range msgs {
			w.complete(r, "w", m)
		}
	}
}

// consumeAll receives from subscription all in peek-lock mode: completes,
// abandons, dead-letters.
func (w *killWorker) consumeAll() {
	r, err := w.all.NewReceiver(nil)
	killMust(err, "receiver")
	for {
		msgs, err := r.ReceiveMessages(killCtx, 4, nil)
		killMust(err, "receive all")
		for _, m := range msgs {
			w.settle(r, "ta", m, [4]int{80, 90, 90, 97})
		}
	}
}

// killDeleting returns a consumer in receive-and-delete mode: of dd, of
// subscription red, or of subscription all's dead-letter queue. It says
// "R?" before each receive and "R" with what it got after; it waits for a
// poke or 10ms when it got nothing.
func killDeleting(code string) func(*killWorker) {
	return func(w *killWorker) {
		opts := &minibus.ReceiverOptions{ReceiveMode: minibus.ReceiveModeReceiveAndDelete}
		var e killReceivable = map[string]killReceivable{"d": w.dd, "tr": w.red, "ta": w.all}[code]
		if code == "ta" {
			opts.SubQueue = minibus.SubQueueDeadLetter
		}
		r, err := e.NewReceiver(opts)
		killMust(err, "receiver")
		for {
			n := 1 + w.rng.IntN(3)
			killSay("R? %s %d %d", code, w.g, n)
			msgs, err := r.ReceiveMessages(killCtx, n, &minibus.ReceiveMessagesOptions{NoWait: true})
			killMust(err, "receive and delete "+code)
			fields := []string{"R", code, fmt.Sprint(w.g)}
			for _, m := range msgs {
				fields = append(fields, fmt.Sprintf("%d:%s", m.SequenceNumber, m.Body))
				if code == "d" {
					w.give("d")
				}
			}
			killSay("%s", strings.Join(fields, " "))
			if len(msgs) == 0 {
				select {
				case <-w.wake[numbering(code)]:
				case <-time.After(10 * time.Millisecond):
				}
			}
		}
	}
}

// consumeSessions accepts the next session, completes or abandons what it
// has, sets its state and releases it.
func (w *killWorker) consumeSessions() {
	for {
		ctx, cancel := context.WithTimeout(killCtx, 50*time.Millisecond)
		s, err := w.sess.AcceptNextSession(ctx, nil)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			continue
		}
		killMust(err, "accept next session")
		msgs, err := s.ReceiveMessages(killCtx, 5, &minibus.ReceiveMessagesOptions{NoWait: true})
		killMust(err, "receive session")
		for _, m := range msgs {
			w.settle(s, "s", m, [4]int{85, 100, 100, 100})
		}
		state := fmt.Sprintf("%d.%d", w.cycle, w.n)
		w.n++
		killSay("X? %s %s", s.SessionID(), state)
		killMust(s.SetSessionState(killCtx, []byte(state), nil), "set session state")
		killSay("X %s %s", s.SessionID(), state)
		killMust(s.Close(killCtx), "close session")
	}
}
