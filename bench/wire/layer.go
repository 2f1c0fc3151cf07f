package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/Azure/go-amqp"
)

// BodySize is the size of every message body: 1 KiB.
const BodySize = 1024

// LayerConfig is one run of the AMQP-layer comparison: one go-amqp
// connection sends N messages to the queue while another receives them,
// with the given link credit.
type LayerConfig struct {
	Broker string // Minibus or Proton: minibus's receiver asks for snd-settle-mode settled (receive-and-delete)
	Addr   string // host:port
	Credit int    // the receiver's link credit (go-amqp ReceiverOptions.Credit)
	// Presettled sends every transfer settled (the link's snd-settle-mode
	// is mixed): Send returns once the transfer is written. Otherwise each
	// Send waits for the broker's disposition, as the SDKs' sends do.
	Presettled bool
	N          int // measured messages
	Warmup     int // messages sent and received before the measured ones
	// Paced messages are sent after the flood, one per PaceInterval
	// (never catching up in bursts), for the latency at a load both
	// brokers carry; 0: no paced phase.
	Paced        int
	PaceInterval time.Duration
}

// LayerResult is what one layer run measured.
type LayerResult struct {
	Msgs    int     `json:"msgs"`
	Seconds float64 `json:"seconds"` // first measured send to last receive
	Rate    float64 `json:"rate"`    // msgs/s
	// Send-to-receive latency of the measured messages: from just before
	// Send to just after Receive returned it, in µs.
	P50us float64 `json:"p50_us"`
	P99us float64 `json:"p99_us"`
	MaxUs float64 `json:"max_us"`
	// CPU time per message over the measured phase, in µs: the broker
	// process's (0 when not known) and this client process's.
	BrokerCPUus float64 `json:"broker_cpu_us"`
	ClientCPUus float64 `json:"client_cpu_us"`
	// The paced phase: its latencies in µs and the rate the sender kept.
	PacedP50us float64 `json:"paced_p50_us"`
	PacedP99us float64 `json:"paced_p99_us"`
	PacedMaxUs float64 `json:"paced_max_us"`
	PacedRate  float64 `json:"paced_rate"`
}

// dial opens a go-amqp connection with SASL ANONYMOUS, which both brokers
// accept.
func dial(ctx context.Context, addr string) (*amqp.Conn, error) {
	return amqp.Dial(ctx, "amqp://"+addr, &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous()})
}

// receiverOptions are the receiver's options on broker: minibus in
// receive-and-delete (the Proton example broker sends every message
// settled on its own and accepts no other settle mode than mixed).
func receiverOptions(broker string, credit int32) *amqp.ReceiverOptions {
	o := &amqp.ReceiverOptions{Credit: credit}
	if broker == Minibus {
		o.RequestedSenderSettleMode = amqp.SenderSettleModeSettled.Ptr()
	}
	return o
}

// RunLayer runs one layer run against a broker at cfg.Addr; pid, if not
// 0, is the broker's process, whose CPU time is measured.
func RunLayer(ctx context.Context, cfg LayerConfig, pid int) (LayerResult, error) {
	var res LayerResult
	sconn, err := dial(ctx, cfg.Addr)
	if err != nil {
		return res, fmt.Errorf("dial the sender's connection: %w", err)
	}
	defer sconn.Close()
	rconn, err := dial(ctx, cfg.Addr)
	if err != nil {
		return res, fmt.Errorf("dial the receiver's connection: %w", err)
	}
	defer rconn.Close()
	ssess, err := sconn.NewSession(ctx, nil)
	if err != nil {
		return res, err
	}
	rsess, err := rconn.NewSession(ctx, nil)
	if err != nil {
		return res, err
	}
	recv, err := rsess.NewReceiver(ctx, QueueName, receiverOptions(cfg.Broker, int32(cfg.Credit)))
	if err != nil {
		return res, fmt.Errorf("attach the receiver: %w", err)
	}
	// Mixed, the default: the Proton broker answers no other sender
	// settle mode; pre-settled sends say so on each transfer.
	send, err := ssess.NewSender(ctx, QueueName, nil)
	if err != nil {
		return res, fmt.Errorf("attach the sender: %w", err)
	}

	base := time.Now()
	if cfg.Warmup > 0 {
		if _, _, err := exchange(ctx, send, recv, base, cfg.Warmup, cfg.Presettled, false, 0); err != nil {
			return res, fmt.Errorf("warm-up: %w", err)
		}
	}
	var bcpu0 time.Duration
	if pid != 0 {
		if bcpu0, err = ProcCPU(pid); err != nil {
			return res, err
		}
	}
	ccpu0 := SelfCPU()
	lat, wall, err := exchange(ctx, send, recv, base, cfg.N, cfg.Presettled, true, 0)
	if err != nil {
		return res, err
	}
	ccpu := SelfCPU() - ccpu0
	if pid != 0 {
		bcpu1, err := ProcCPU(pid)
		if err != nil {
			return res, err
		}
		res.BrokerCPUus = float64(bcpu1-bcpu0) / float64(time.Microsecond) / float64(cfg.N)
	}
	res.ClientCPUus = float64(ccpu) / float64(time.Microsecond) / float64(cfg.N)
	res.Msgs = cfg.N
	res.Seconds = wall.Seconds()
	res.Rate = float64(cfg.N) / wall.Seconds()
	slices.Sort(lat)
	res.P50us = percentile(lat, 0.50)
	res.P99us = percentile(lat, 0.99)
	res.MaxUs = percentile(lat, 1)

	if cfg.Paced > 0 {
		lat, wall, err := exchange(ctx, send, recv, base, cfg.Paced, cfg.Presettled, true, cfg.PaceInterval)
		if err != nil {
			return res, fmt.Errorf("paced: %w", err)
		}
		slices.Sort(lat)
		res.PacedP50us = percentile(lat, 0.50)
		res.PacedP99us = percentile(lat, 0.99)
		res.PacedMaxUs = percentile(lat, 1)
		res.PacedRate = float64(cfg.Paced) / wall.Seconds()
	}

	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return res, errors.Join(send.Close(cctx), recv.Close(cctx))
}

// exchange sends n messages (settled if presettled) from one goroutine,
// as fast as it can or one per pace, while this one receives them; each
// body carries its send time (since base). It returns the latencies in µs
// (if keep) and the time from the first send to the last receive.
func exchange(ctx context.Context, send *amqp.Sender, recv *amqp.Receiver, base time.Time, n int, presettled, keep bool, pace time.Duration) ([]float64, time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var lat []float64
	if keep {
		lat = make([]float64, 0, n)
	}
	start := time.Now()
	var wg sync.WaitGroup
	var sendErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		next := time.Now()
		for i := 0; i < n; i++ {
			if pace > 0 {
				if d := time.Until(next); d > 0 {
					time.Sleep(d)
				}
				next = time.Now().Add(pace)
			}
			body := make([]byte, BodySize)
			binary.LittleEndian.PutUint64(body, uint64(time.Since(base)))
			if err := send.Send(ctx, amqp.NewMessage(body), &amqp.SendOptions{Settled: presettled}); err != nil {
				sendErr = fmt.Errorf("send %d of %d: %w", i+1, n, err)
				cancel()
				return
			}
		}
	}()
	var recvErr error
	for i := 0; i < n; i++ {
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		m, err := recv.Receive(rctx, nil)
		rcancel()
		if err != nil {
			recvErr = fmt.Errorf("receive %d of %d: %w", i+1, n, err)
			cancel()
			break
		}
		now := time.Since(base)
		body := m.GetData()
		if len(body) != BodySize {
			recvErr = fmt.Errorf("receive %d of %d: a body of %d bytes, want %d", i+1, n, len(body), BodySize)
			cancel()
			break
		}
		if keep {
			sent := time.Duration(binary.LittleEndian.Uint64(body))
			lat = append(lat, float64(now-sent)/float64(time.Microsecond))
		}
	}
	wall := time.Since(start)
	wg.Wait()
	if sendErr != nil && !errors.Is(sendErr, context.Canceled) {
		return nil, 0, sendErr
	}
	if recvErr != nil {
		return nil, 0, errors.Join(recvErr, sendErr)
	}
	return lat, wall, nil
}

// percentile of sorted values (nearest rank); q = 1 is the maximum.
func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
