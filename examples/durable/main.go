// Command durable shows what a durable namespace keeps across a crash: a
// child process opens the namespace, sends three orders, receives one
// without settling it, and is killed (SIGKILL: no Close, no deferred
// calls). The parent then opens the same directory, says what it found and
// receives everything: the three orders, the one that was locked with its
// delivery counted (SEMANTICS L6).
//
//	go run ./examples/durable            # in a temporary directory
//	go run ./examples/durable -dir data  # in ./data, kept afterwards
//
// Run it again with the same -dir: the child finds the queue of the run
// before, and the new orders' sequence numbers follow the old ones (an
// acknowledged number is never reused).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"

	"github.com/minibus-go/minibus"
)

func main() {
	dir := flag.String("dir", "", "the namespace's directory (default: a temporary one, removed afterwards)")
	child := flag.Bool("child", false, "run as the process that is killed")
	flag.Parse()
	if *child {
		sendAndDie(*dir)
		return
	}
	if *dir == "" {
		tmp, err := os.MkdirTemp("", "minibus-durable-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		*dir = tmp
	}
	if err := crashChild(*dir); err != nil {
		log.Fatal(err)
	}
	if err := recoverOrders(os.Stdout, *dir); err != nil {
		log.Fatal(err)
	}
}

// crashChild runs this program again as the child and waits for it to be
// killed.
func crashChild(dir string) error {
	cmd := exec.Command(os.Args[0], "-child", "-dir", dir)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Exited() {
		return fmt.Errorf("the child should have been killed: %v", err)
	}
	fmt.Println("child killed:", exit.ProcessState)
	return nil
}

// sendAndDie is the child: it sends three orders, receives one and kills
// itself before settling it.
func sendAndDie(dir string) {
	ctx := context.Background()
	ns, err := minibus.Open(dir) // SyncAlways: each call returns once its change is on disk
	if err != nil {
		log.Fatal(err)
	}
	q, err := ns.Queue("orders")
	switch {
	case errors.Is(err, minibus.ErrNotFound):
		q, err = ns.CreateQueue("orders", nil)
		fmt.Println("child created the queue orders in", dir)
	case err == nil:
		rp := q.RuntimeProperties()
		fmt.Printf("child found the queue orders of an earlier run in %s, holding %d messages\n", dir, rp.ActiveMessageCount)
	}
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range []string{"2 apples", "1 pear", "6 plums"} {
		if err := q.SendMessage(ctx, &minibus.Message{Body: []byte(o)}, nil); err != nil {
			log.Fatal(err)
		}
		fmt.Println("child sent:", o)
	}
	r, err := q.NewReceiver(nil)
	if err != nil {
		log.Fatal(err)
	}
	m, err := r.ReceiveMessages(ctx, 1, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("child received %q and dies before completing it\n", m[0].Body)
	p, _ := os.FindProcess(os.Getpid())
	_ = p.Kill() // SIGKILL: nothing after this line runs
	select {}
}
