package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
)

// SDKConfig is one end-to-end run through azservicebus: one sender sends
// N messages in batches of Batch while one receiver receives up to Batch
// a call (peek-lock) and completes each, in turn (Completers 1) or from
// Completers goroutines.
type SDKConfig struct {
	ConnStr    string
	N          int
	Batch      int
	Completers int
	Warmup     int // messages sent, received and completed before the measured ones
	// ClientProfile, if set, gets a CPU profile of this process over the
	// measured phase.
	ClientProfile io.Writer
}

// SDKResult is what one SDK run measured.
type SDKResult struct {
	Msgs    int     `json:"msgs"`
	Seconds float64 `json:"seconds"` // first measured send to last completion
	Rate    float64 `json:"rate"`    // msgs/s
	// CPU time per message over the measured phase, in µs: the server
	// process's and this client process's (the SDK and go-amqp, and this
	// program's loop, which is little).
	ServerCPUus float64 `json:"server_cpu_us"`
	ClientCPUus float64 `json:"client_cpu_us"`
}

// RunSDK runs one SDK run against the server process pid (0: its CPU is
// not measured).
func RunSDK(ctx context.Context, cfg SDKConfig, pid int) (SDKResult, error) {
	var res SDKResult
	client, err := azservicebus.NewClientFromConnectionString(cfg.ConnStr, nil)
	if err != nil {
		return res, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		client.Close(cctx)
	}()
	sender, err := client.NewSender(QueueName, nil)
	if err != nil {
		return res, err
	}
	receiver, err := client.NewReceiverForQueue(QueueName, nil)
	if err != nil {
		return res, err
	}
	if cfg.Warmup > 0 {
		if err := sdkExchange(ctx, sender, receiver, cfg.Warmup, cfg.Batch, cfg.Completers); err != nil {
			return res, fmt.Errorf("warm-up: %w", err)
		}
	}
	var scpu0 time.Duration
	if pid != 0 {
		if scpu0, err = ProcCPU(pid); err != nil {
			return res, err
		}
	}
	if cfg.ClientProfile != nil {
		if err := pprof.StartCPUProfile(cfg.ClientProfile); err != nil {
			return res, err
		}
	}
	ccpu0 := SelfCPU()
	start := time.Now()
	err = sdkExchange(ctx, sender, receiver, cfg.N, cfg.Batch, cfg.Completers)
	wall := time.Since(start)
	ccpu := SelfCPU() - ccpu0
	if cfg.ClientProfile != nil {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return res, err
	}
	if pid != 0 {
		scpu1, err := ProcCPU(pid)
		if err != nil {
			return res, err
		}
		res.ServerCPUus = float64(scpu1-scpu0) / float64(time.Microsecond) / float64(cfg.N)
	}
	res.ClientCPUus = float64(ccpu) / float64(time.Microsecond) / float64(cfg.N)
	res.Msgs, res.Seconds, res.Rate = cfg.N, wall.Seconds(), float64(cfg.N)/wall.Seconds()
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return res, errors.Join(sender.Close(cctx), receiver.Close(cctx))
}

// sdkExchange sends n messages in batches of batch from one goroutine
// while this one receives batches and completes every message, in turn or
// from completers goroutines; it returns once all n are completed.
func sdkExchange(ctx context.Context, sender *azservicebus.Sender, receiver *azservicebus.Receiver, n, batch, completers int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var sendErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := sendBatches(ctx, sender, n, batch); err != nil {
			sendErr = err
			cancel()
		}
	}()

	var completeErr error
	var once sync.Once
	failComplete := func(err error) {
		once.Do(func() { completeErr = err; cancel() })
	}
	var work chan *azservicebus.ReceivedMessage
	if completers > 1 {
		work = make(chan *azservicebus.ReceivedMessage, batch)
		for range completers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for m := range work {
					if err := receiver.CompleteMessage(ctx, m, nil); err != nil {
						failComplete(fmt.Errorf("complete: %w", err))
					}
				}
			}()
		}
	}
	var recvErr error
	var got atomic.Int64
	for int(got.Load()) < n && ctx.Err() == nil {
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		msgs, err := receiver.ReceiveMessages(rctx, batch, nil)
		rcancel()
		if err != nil {
			recvErr = fmt.Errorf("receive after %d of %d: %w", got.Load(), n, err)
			break
		}
		if len(msgs) == 0 {
			recvErr = fmt.Errorf("receive after %d of %d: nothing within 30 s", got.Load(), n)
			break
		}
		for _, m := range msgs {
			if len(m.Body) != BodySize {
				recvErr = fmt.Errorf("a body of %d bytes, want %d", len(m.Body), BodySize)
				break
			}
			if work != nil {
				work <- m
			} else if err := receiver.CompleteMessage(ctx, m, nil); err != nil {
				recvErr = fmt.Errorf("complete: %w", err)
				break
			}
		}
		got.Add(int64(len(msgs)))
		if recvErr != nil {
			break
		}
	}
	if work != nil {
		close(work)
	}
	if recvErr != nil {
		cancel()
	}
	wg.Wait()
	if err := errors.Join(recvErr, completeErr); err != nil {
		return err
	}
	if sendErr != nil {
		return sendErr
	}
	if g := int(got.Load()); g != n {
		return fmt.Errorf("received %d messages, want %d", g, n)
	}
	return nil
}

// sendBatches sends n 1 KiB messages in batches of up to batch (fewer if
// the link's max-message-size says so).
func sendBatches(ctx context.Context, sender *azservicebus.Sender, n, batch int) error {
	for sent := 0; sent < n; {
		mb, err := sender.NewMessageBatch(ctx, nil)
		if err != nil {
			return fmt.Errorf("new batch: %w", err)
		}
		for mb.NumMessages() < int32(batch) && sent+int(mb.NumMessages()) < n {
			err := mb.AddMessage(&azservicebus.Message{Body: make([]byte, BodySize)}, nil)
			if errors.Is(err, azservicebus.ErrMessageTooLarge) && mb.NumMessages() > 0 {
				break
			}
			if err != nil {
				return fmt.Errorf("add to a batch: %w", err)
			}
		}
		if err := sender.SendMessageBatch(ctx, mb, nil); err != nil {
			return fmt.Errorf("send a batch after %d of %d: %w", sent, n, err)
		}
		sent += int(mb.NumMessages())
	}
	return nil
}
