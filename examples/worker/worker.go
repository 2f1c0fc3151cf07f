package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/minibus-go/minibus"
)

// Worker sends the emails queued in "emails": a service-shaped use of a
// Processor. Bad addresses are dead-lettered; a mail server that is down is
// retried a minute later, up to the queue's MaxDeliveryCount.
type Worker struct {
	q    *minibus.Queue
	p    *minibus.Processor
	mail Mailer

	mu   sync.Mutex
	sent []string
}

// Mailer sends one email; a test gives its own.
type Mailer func(ctx context.Context, to, body string) error

// ErrServerDown is a transient failure of the mail server: worth a retry.
var ErrServerDown = errors.New("mail server down")

// NewWorker makes the "emails" queue in ns and a processor over it.
func NewWorker(ns *minibus.Namespace, mail Mailer) (*Worker, error) {
	q, err := ns.CreateQueue("emails", &minibus.QueueProperties{MaxDeliveryCount: 3})
	if err != nil {
		return nil, err
	}
	w := &Worker{q: q, mail: mail}
	w.p, err = q.NewProcessor(w.handle, &minibus.ProcessorOptions{
		MaxConcurrentCalls: 4,
		RetryDelay:         func(uint32) time.Duration { return time.Minute },
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Enqueue queues an email to to.
func (w *Worker) Enqueue(ctx context.Context, to, body string) error {
	return w.q.SendMessage(ctx, &minibus.Message{To: to, Body: []byte(body)}, nil)
}

// Run processes emails until ctx ends.
func (w *Worker) Run(ctx context.Context) error { return w.p.Run(ctx) }

// Processor returns the worker's processor.
func (w *Worker) Processor() *minibus.Processor { return w.p }

// Sent returns the addresses mailed so far, in no order.
func (w *Worker) Sent() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.sent...)
}

func (w *Worker) handle(ctx context.Context, m *minibus.ReceivedMessage) error {
	if !strings.Contains(m.To, "@") {
		return &minibus.DeadLetterError{Reason: "BadAddress", ErrorDescription: fmt.Sprintf("%q is no address", m.To)}
	}
	if err := w.mail(ctx, m.To, string(m.Body)); err != nil {
		return err // retried after a minute
	}
	w.mu.Lock()
	w.sent = append(w.sent, m.To)
	w.mu.Unlock()
	return nil
}
