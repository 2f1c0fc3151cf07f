package minibus

import (
	"context"
	"sync"

	"github.com/minibus-go/minibus/internal/engine"
	"github.com/minibus-go/minibus/internal/store"
)

// pool is a plain processor's workers: MaxConcurrentCalls goroutines that
// take turns receiving. A worker with nothing to do and nobody receiving
// receives, in one call, as many messages as there are workers not
// handling one, keeps the first and queues the others for the workers
// that wait; a worker that ends a handler takes the next queued message
// itself before it waits. So at most MaxConcurrentCalls messages are taken
// and not settled, a queued message always has a worker free for it, and
// handlers that return at once need no hand-over between goroutines: a
// waiting worker is woken only while work waits that no running worker
// would do (wakeLocked).
type pool struct {
	p   *Processor
	ctx context.Context // Run's: receives and handlers end with it
	r   *engine.Receiver
	rec *Receiver

	mu sync.Mutex
	// more is signalled on mu when a message is queued, and broadcast when
	// the pool stops.
	more sync.Cond
	// queue holds, from head, the messages taken and not yet given to a
	// worker, in the order received.
	queue []*ReceivedMessage
	head  int
	// busy counts the workers handling a message; working[i] is worker i's,
	// nil when none.
	busy    int
	working []*ReceivedMessage
	// waiting counts the workers waiting on more, woken those of them
	// signalled and not yet running: wake keeps one on its way while there
	// is work nobody running will do.
	waiting, woken int
	// receiving is set while a worker receives; that worker alone uses
	// views and failures.
	receiving bool
	views     []store.View
	failures  int
	// stopped is set, and done closed, when Run's ctx ends or Run must end
	// (err, from goOn); workers then handle what is queued and return.
	stopped bool
	err     error
	done    chan struct{}
}

func newPool(ctx context.Context, p *Processor, r *engine.Receiver) *pool {
	w := &pool{p: p, ctx: ctx, r: r, rec: &Receiver{r},
		working: make([]*ReceivedMessage, p.calls), views: make([]store.View, 0, p.calls),
		done: make(chan struct{})}
	w.more.L = &w.mu
	return w
}

// stop stops the pool with err, nil when ctx ended; the first stop wins.
func (w *pool) stop(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.stopped, w.err = true, err
	close(w.done)
	w.more.Broadcast()
}

// work is worker i: it handles queued messages, receives when nobody does,
// and waits otherwise, until the pool stops and nothing is queued.
func (w *pool) work(i int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		switch {
		case w.head < len(w.queue):
			m := w.queue[w.head]
			w.queue[w.head] = nil
			if w.head++; w.head == len(w.queue) {
				w.queue, w.head = w.queue[:0], 0
			}
			w.handleLocked(i, m)
		case w.stopped:
			return
		case w.receiving:
			w.waiting++
			w.more.Wait()
			w.waiting--
			w.woken = max(w.woken-1, 0)
		default:
			w.receiveLocked()
		}
	}
}

// handleLocked runs the handler on m, worker i's, with w.mu unlocked.
func (w *pool) handleLocked(i int, m *ReceivedMessage) {
	w.working[i] = m
	w.busy++
	w.wakeLocked()
	w.mu.Unlock()
	w.p.handle(w.ctx, w.rec, nil, m)
	w.mu.Lock()
	w.busy--
	w.working[i] = nil
}

// receiveLocked receives, with w.mu unlocked, up to as many messages as
// there are workers not handling one, and queues them; after a failure it
// asks goOn whether to go on, and stops the pool when not.
func (w *pool) receiveLocked() {
	w.receiving = true
	n := w.p.calls - w.busy // nothing is queued
	w.mu.Unlock()
	var msgs []*ReceivedMessage
	views, err := w.r.Receive(w.ctx, n, w.views[:0], 0)
	if err == nil {
		w.failures = 0
		msgs = build(w.p.e.Broker(), views, how(w.r), w.r)
	} else {
		w.failures++
		err = w.p.goOn(w.ctx, w.p.sub.queue(), err, w.failures)
	}
	if err != nil {
		w.stop(err)
	}
	w.mu.Lock()
	w.receiving = false
	w.queue = append(w.queue, msgs...)
	w.wakeLocked()
}

// wakeLocked wakes a waiting worker when there is work that no worker on
// its way to it would do: a queued message, or receiving when nobody does.
// Each worker that takes a queued message calls it again, so the workers
// wake one after the other, only as long as messages wait for them.
func (w *pool) wakeLocked() {
	if w.woken == 0 && w.waiting > 0 && (w.head < len(w.queue) || !w.receiving) {
		w.woken++
		w.more.Signal()
	}
}

// tokens returns the locks of the messages taken and not settled.
func (w *pool) tokens() [][16]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out [][16]byte
	for _, held := range [2][]*ReceivedMessage{w.queue[w.head:], w.working} {
		for _, m := range held {
			if m != nil && m.LockToken != ([16]byte{}) {
				out = append(out, m.LockToken)
			}
		}
	}
	return out
}
