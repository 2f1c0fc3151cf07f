package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	_ "github.com/mattn/go-sqlite3" // the driver goqite's README uses
	"maragu.dev/goqite"
)

// GoqitePeer is goqite on SQLite in memory, set up as goqite's README does:
// mattn/go-sqlite3 opened on ":memory:?_journal=WAL&_timeout=5000&_fk=true"
// with SetMaxOpenConns(1) and SetMaxIdleConns(1) (SQLite has one writer, and
// an in-memory database lives in its one connection), and the README's
// SQLite schema. Send is Queue.Send (one transaction, committed before it
// returns). goqite has neither a blocking nor a batch receive: Receive is
// Queue.ReceiveAndWait polling every goqitePoll and returns one message;
// Complete is Queue.Delete by message ID. Schedule is Send with a Delay.
// Redelivery timeout and max receive count keep goqite's defaults (5 s, 3).
//
// Its topic is one goqite queue per subscription in the same table, a send
// inserting into each in one transaction (Queue.SendTx).
//
// goqite moves 3–15k messages a second here, so it runs the throughput and
// memory workloads with a tenth of the messages ([Reducer]).
type GoqitePeer struct{}

// Reduction implements [Reducer]: a tenth of the messages.
func (GoqitePeer) Reduction() int { return 10 }

// goqiteNoCgo is what the goqite peers lack in a build without cgo.
const goqiteNoCgo = "goqite needs mattn/go-sqlite3 built with cgo (a C compiler and CGO_ENABLED=1); this program was built without cgo"

// Missing implements [Needy]: cgo, for mattn/go-sqlite3.
func (GoqitePeer) Missing() string {
	if !cgoBuilt {
		return goqiteNoCgo
	}
	return ""
}

// Missing implements [Needy]: cgo, for mattn/go-sqlite3.
func (GoqiteFilePeer) Missing() string {
	if !cgoBuilt {
		return goqiteNoCgo
	}
	return ""
}

// goqitePoll is the receive poll interval: goqite's job runner polls every
// 100 ms by default; 1 ms keeps W4's latency from being the poll interval.
const goqitePoll = time.Millisecond

// goqiteSchema is schema_sqlite.sql of goqite v0.4.0, as its README gives it.
const goqiteSchema = `
create table goqite (
  id text primary key default ('m_' || lower(hex(randomblob(16)))),
  created text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
  updated text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
  queue text not null,
  body blob not null,
  timeout text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
  received integer not null default 0,
  priority integer not null default 0
) strict;

create trigger goqite_updated_timestamp after update on goqite begin
  update goqite set updated = strftime('%Y-%m-%dT%H:%M:%fZ') where id = old.id;
end;

create index goqite_queue_priority_created_idx on goqite (queue, priority desc, created);
`

// Name implements [Peer].
func (GoqitePeer) Name() string { return "goqite" }

// goqiteDSN is the data source name of goqite's README.
const goqiteDSN = ":memory:?_journal=WAL&_timeout=5000&_fk=true"

// OpenQueue implements [Peer].
func (GoqitePeer) OpenQueue(ctx context.Context, cfg Config) (Queue, error) {
	db, err := openGoqiteDB(ctx, goqiteDSN)
	if err != nil {
		return nil, err
	}
	return &goqiteQueue{db: db, q: goqite.New(goqite.NewOpts{DB: db, Name: "bench"})}, nil
}

// GoqiteFilePeer is GoqitePeer on a SQLite file, bench.db in a fresh
// directory under [Config.Dir] removed by Close, opened with the README's
// parameters: "file:<dir>/bench.db?_journal=WAL&_timeout=5000&_fk=true",
// one connection. With _journal=WAL mattn/go-sqlite3 sets PRAGMA
// synchronous=NORMAL: a commit is written to the WAL file, which is
// fsynced only at checkpoints (every 1000 pages by default), so an
// acknowledged send survives a crash of the process but a crash of the
// machine can lose the commits since the last checkpoint. Full adds
// _sync=FULL (PRAGMA synchronous=FULL): the WAL is fsynced at every
// commit, so an acknowledged send survives a crash of the machine.
//
// SQLite has one writer and no group commit: concurrent sends queue for
// the one connection, one transaction and (with Full) one fsync each.
// SendBatch sends the batch in one transaction (Queue.SendTx per message,
// then Commit): all or none, one fsync.
type GoqiteFilePeer struct {
	Full bool
}

// Name implements [Peer]: goqite-file-full or goqite-file.
func (p GoqiteFilePeer) Name() string {
	if p.Full {
		return "goqite-file-full"
	}
	return "goqite-file"
}

// OpenQueue implements [Peer].
func (p GoqiteFilePeer) OpenQueue(ctx context.Context, cfg Config) (Queue, error) {
	dir, err := os.MkdirTemp(cfg.Dir, "minibus-bench-goqite-")
	if err != nil {
		return nil, err
	}
	dsn := "file:" + filepath.Join(dir, "bench.db") + "?_journal=WAL&_timeout=5000&_fk=true"
	if p.Full {
		dsn += "&_sync=FULL"
	}
	db, err := openGoqiteDB(ctx, dsn)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &goqiteQueue{db: db, q: goqite.New(goqite.NewOpts{DB: db, Name: "bench"}), dir: dir}, nil
}

// OpenTopic implements [TopicPeer].
func (GoqitePeer) OpenTopic(ctx context.Context, cfg Config, subs int) (Topic, error) {
	db, err := openGoqiteDB(ctx, goqiteDSN)
	if err != nil {
		return nil, err
	}
	t := &goqiteTopic{db: db, subs: make([]*goqite.Queue, subs)}
	for i := range t.subs {
		t.subs[i] = goqite.New(goqite.NewOpts{DB: db, Name: "s" + strconv.Itoa(i)})
	}
	return t, nil
}

func openGoqiteDB(ctx context.Context, dsn string) (*sql.DB, error) {
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if _, err := db.ExecContext(ctx, goqiteSchema); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

type goqiteQueue struct {
	db  *sql.DB
	q   *goqite.Queue
	dir string // the database's directory, removed by Close; "" in memory
}

func (g *goqiteQueue) Send(ctx context.Context, body []byte) error {
	return g.q.Send(ctx, goqite.Message{Body: body})
}

// SendBatch implements [BatchSender]: one transaction, Queue.SendTx per
// message, then Commit.
func (g *goqiteQueue) SendBatch(ctx context.Context, bodies [][]byte) error {
	tx, err := g.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for _, b := range bodies {
		if err := g.q.SendTx(ctx, tx, goqite.Message{Body: b}); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// Schedule implements [Scheduler].
func (g *goqiteQueue) Schedule(ctx context.Context, body []byte, at time.Time) error {
	return g.q.Send(ctx, goqite.Message{Body: body, Delay: max(time.Until(at), 0)})
}

// Count implements [Counter].
func (g *goqiteQueue) Count(ctx context.Context) (int64, error) {
	var n int64
	err := g.db.QueryRowContext(ctx, `select count(*) from goqite where queue = ?`, "bench").Scan(&n)
	return n, err
}

// OffHeapBytes implements [OffHeap]: the pages of the in-memory database.
func (g *goqiteQueue) OffHeapBytes(ctx context.Context) (int64, error) {
	var pages, size int64
	if err := g.db.QueryRowContext(ctx, `pragma page_count`).Scan(&pages); err != nil {
		return 0, err
	}
	if err := g.db.QueryRowContext(ctx, `pragma page_size`).Scan(&size); err != nil {
		return 0, err
	}
	return pages * size, nil
}

func (g *goqiteQueue) NewReceiver(ctx context.Context) (Receiver, error) {
	return goqiteReceiver{q: g.q}, nil
}

func (g *goqiteQueue) Close() error {
	err := g.db.Close()
	if g.dir != "" {
		err = errors.Join(err, os.RemoveAll(g.dir))
	}
	return err
}

type goqiteReceiver struct{ q *goqite.Queue }

func (r goqiteReceiver) Receive(ctx context.Context, max int, buf []Delivery) ([]Delivery, error) {
	buf = buf[:0]
	m, err := r.q.ReceiveAndWait(ctx, goqitePoll)
	if err != nil {
		return buf, err
	}
	return append(buf, Delivery{Body: m.Body, ref: m}), nil
}

func (r goqiteReceiver) Complete(ctx context.Context, d Delivery) error {
	return r.q.Delete(ctx, d.ref.(*goqite.Message).ID)
}

func (goqiteReceiver) Close() error { return nil }

type goqiteTopic struct {
	db   *sql.DB
	subs []*goqite.Queue
}

// Send inserts the message into every subscription's queue in one
// transaction.
func (t *goqiteTopic) Send(ctx context.Context, body []byte) error {
	tx, err := t.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for _, q := range t.subs {
		if err := q.SendTx(ctx, tx, goqite.Message{Body: body}); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

func (t *goqiteTopic) NewReceiver(ctx context.Context, sub int) (Receiver, error) {
	if sub < 0 || sub >= len(t.subs) {
		return nil, fmt.Errorf("bench: goqite: no subscription %d", sub)
	}
	return goqiteReceiver{q: t.subs[sub]}, nil
}

func (t *goqiteTopic) Close() error { return t.db.Close() }
