package wire

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/go-amqp"
)

// IdleConfig is one run of the idle-connection measurement: Conns
// connections open at once, each with a session, a sender and a receiver
// link on the queue; each sends one message and receives one; then the
// broker's memory is read with every connection idle.
type IdleConfig struct {
	Broker   string
	Addr     string
	Conns    int
	Parallel int           // connections dialled at once (the Proton broker's listen backlog is 16)
	Settle   time.Duration // how long the connections stay idle before the memory is read
}

// IdleResult is what one idle run measured.
type IdleResult struct {
	Conns     int   `json:"conns"`
	Refused   int   `json:"refused"`    // connections or links that failed
	RSSBefore int64 `json:"rss_before"` // the broker's RSS before the first connection, bytes
	RSSAfter  int64 `json:"rss_after"`  // with every connection open and idle, bytes
	// PerConn is (RSSAfter - RSSBefore) / Conns, bytes.
	PerConn   float64 `json:"per_conn"`
	OpenSec   float64 `json:"open_seconds"` // opening every connection and its links
	Exchanged int     `json:"exchanged"`    // messages received, one per connection
	ExchSec   float64 `json:"exchange_seconds"`
}

// idleConn is one connection of an idle run.
type idleConn struct {
	conn *amqp.Conn
	send *amqp.Sender
	recv *amqp.Receiver
}

// open dials one connection with its session and links; the receiver has
// manual credit, given once, so that each takes exactly one message.
func (c *idleConn) open(ctx context.Context, broker, addr string) error {
	conn, err := dial(ctx, addr)
	if err != nil {
		return err
	}
	c.conn = conn
	sess, err := conn.NewSession(ctx, nil)
	if err != nil {
		return err
	}
	if c.recv, err = sess.NewReceiver(ctx, QueueName, receiverOptions(broker, -1)); err != nil {
		return err
	}
	if c.send, err = sess.NewSender(ctx, QueueName, nil); err != nil {
		return err
	}
	return nil
}

// RunIdle runs one idle run against the broker process pid at cfg.Addr.
func RunIdle(ctx context.Context, cfg IdleConfig, pid int) (IdleResult, error) {
	res := IdleResult{Conns: cfg.Conns}
	var err error
	if pid != 0 {
		if res.RSSBefore, err = ProcRSS(pid); err != nil {
			return res, err
		}
	}
	conns := make([]idleConn, cfg.Conns)
	defer func() {
		var wg sync.WaitGroup
		for i := range conns {
			if conns[i].conn != nil {
				wg.Add(1)
				go func(c *amqp.Conn) {
					defer wg.Done()
					c.Close()
				}(conns[i].conn)
			}
		}
		wg.Wait()
	}()

	// Open every connection, cfg.Parallel at a time.
	start := time.Now()
	var refused atomic.Int64
	var firstErr error
	var mu sync.Mutex
	par := max(cfg.Parallel, 1)
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i := range conns {
		sem <- struct{}{}
		wg.Add(1)
		go func(c *idleConn) {
			defer wg.Done()
			defer func() { <-sem }()
			octx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := c.open(octx, cfg.Broker, cfg.Addr); err != nil {
				refused.Add(1)
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}(&conns[i])
	}
	wg.Wait()
	res.OpenSec = time.Since(start).Seconds()
	res.Refused = int(refused.Load())
	if res.Refused > 0 {
		return res, fmt.Errorf("%d of %d connections failed to open; the first: %w", res.Refused, cfg.Conns, firstErr)
	}

	// Each connection sends one message, and each receiver takes one.
	start = time.Now()
	var got atomic.Int64
	errs := make([]error, len(conns))
	for i := range conns {
		wg.Add(1)
		go func(i int, c *idleConn) {
			defer wg.Done()
			xctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			if err := c.recv.IssueCredit(1); err != nil {
				errs[i] = err
				return
			}
			body := make([]byte, BodySize)
			if err := c.send.Send(xctx, amqp.NewMessage(body), nil); err != nil {
				errs[i] = fmt.Errorf("send: %w", err)
				return
			}
			if _, err := c.recv.Receive(xctx, nil); err != nil {
				errs[i] = fmt.Errorf("receive: %w", err)
				return
			}
			got.Add(1)
		}(i, &conns[i])
	}
	wg.Wait()
	res.ExchSec = time.Since(start).Seconds()
	res.Exchanged = int(got.Load())
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("%d of %d connections exchanged a message: %w", res.Exchanged, cfg.Conns, err)
	}

	// Every connection idle, its receiver without credit: the broker's
	// memory now.
	select {
	case <-time.After(cfg.Settle):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	if pid != 0 {
		if res.RSSAfter, err = ProcRSS(pid); err != nil {
			return res, err
		}
		res.PerConn = float64(res.RSSAfter-res.RSSBefore) / float64(cfg.Conns)
	}
	return res, nil
}
