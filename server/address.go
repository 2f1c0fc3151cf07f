package server

import (
	"strings"
	"unicode"

	"github.com/minibus-go/minibus"
)

// nodeKind says what an AMQP address names (SEMANTICS W2).
type nodeKind uint8

const (
	// nodeEntity is a queue, topic or subscription, or one of their
	// dead-letter queues.
	nodeEntity nodeKind = iota
	// nodeManagement is an entity's request/response node,
	// "<entity>/$management" (SEMANTICS W8).
	nodeManagement
	// nodeCBS is the namespace's claims-based-security node, "$cbs"
	// (SEMANTICS W3).
	nodeCBS
)

// String names the kind for errors and logs.
func (k nodeKind) String() string {
	switch k {
	case nodeEntity:
		return "entity"
	case nodeManagement:
		return "management"
	case nodeCBS:
		return "cbs"
	}
	return "unknown"
}

// address is a parsed link address (SEMANTICS W2).
type address struct {
	kind nodeKind
	// path is the entity path without scheme, host, leading "/", sub-queue
	// or "/$management" suffix: "orders", or "events/Subscriptions/audit"
	// (the "Subscriptions" segment matched in any case and spelled so here).
	// Empty for $cbs.
	path string
	// topic and sub are set for a subscription (path is then
	// topic + "/Subscriptions/" + sub).
	topic string
	sub   string
	// subQueue is the dead-letter queue (/$DeadLetterQueue) or the transfer
	// dead-letter queue (/$Transfer/$DeadLetterQueue) when named.
	subQueue minibus.SubQueue
}

// The keywords of an address, matched case-insensitively (SEMANTICS W2, V1).
const (
	segSubscriptions = "Subscriptions"
	segDeadLetter    = "$DeadLetterQueue"
	segTransfer      = "$Transfer"
	segManagement    = "$management"
	segCBS           = "$cbs"
)

// parseAddress parses a link address (SEMANTICS W2): "queue", "topic",
// "topic/Subscriptions/sub", each optionally followed by "/$DeadLetterQueue"
// or "/$Transfer/$DeadLetterQueue" and then by "/$management"; or "$cbs".
// Each may also come as a URI (amqp://, amqps:// or sb://, with a host and
// an optional port; the host is ignored, as is a query) or with a leading
// "/". Keywords match in any case. An empty or malformed address is an error
// wrapping minibus.ErrInvalidArgument that quotes it. Whether the entity
// exists is resolve's business.
func parseAddress(raw string) (address, error) {
	p, err := addressPath(raw)
	if err != nil {
		return address{}, err
	}
	if p == "" {
		return address{}, failf(minibus.ErrInvalidArgument, quoteAddress(raw), "names no entity")
	}
	segs := strings.Split(p, "/")
	if len(segs) == 1 && strings.EqualFold(segs[0], segCBS) {
		return address{kind: nodeCBS}, nil
	}
	var a address
	if n := len(segs); n > 1 && strings.EqualFold(segs[n-1], segManagement) {
		a.kind = nodeManagement
		segs = segs[:n-1]
	}
	if n := len(segs); n > 1 && strings.EqualFold(segs[n-1], segDeadLetter) {
		a.subQueue = minibus.SubQueueDeadLetter
		segs = segs[:n-1]
		if n := len(segs); n > 1 && strings.EqualFold(segs[n-1], segTransfer) {
			a.subQueue = minibus.SubQueueTransfer
			segs = segs[:n-1]
		}
	}
	for _, s := range segs {
		switch {
		case s == "":
			return address{}, failf(minibus.ErrInvalidArgument, quoteAddress(raw), "empty path segment")
		case strings.HasPrefix(s, "$"):
			return address{}, failf(minibus.ErrInvalidArgument, quoteAddress(raw), "unexpected segment %q", s)
		case strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
			return address{}, failf(minibus.ErrInvalidArgument, quoteAddress(raw), "space or control character in %q", s)
		}
	}
	if n := len(segs); n >= 3 && strings.EqualFold(segs[n-2], segSubscriptions) {
		a.topic = strings.Join(segs[:n-2], "/")
		a.sub = segs[n-1]
		a.path = a.topic + "/" + segSubscriptions + "/" + a.sub
	} else {
		a.path = strings.Join(segs, "/")
	}
	return a, nil
}

// addressPath strips a URI's scheme, host, port and query, and leading and
// trailing "/", from raw, and returns the rest: the path the address names.
func addressPath(raw string) (string, error) {
	p := strings.TrimSpace(raw)
	if p == "" {
		return "", failf(minibus.ErrInvalidArgument, quoteAddress(raw), "empty")
	}
	if i := strings.Index(p, "://"); i >= 0 {
		switch strings.ToLower(p[:i]) {
		case "amqp", "amqps", "sb":
		default:
			return "", failf(minibus.ErrInvalidArgument, quoteAddress(raw), "scheme %q (want amqp, amqps or sb)", p[:i])
		}
		rest := p[i+3:]
		if j := strings.IndexAny(rest, "?#"); j >= 0 {
			rest = rest[:j]
		}
		host, path, _ := strings.Cut(rest, "/")
		if host == "" {
			return "", failf(minibus.ErrInvalidArgument, quoteAddress(raw), "no host")
		}
		p = path
	}
	return strings.Trim(p, "/"), nil
}

// quoteAddress is how errors name an address.
func quoteAddress(raw string) string {
	return "address " + quoteName(raw)
}

// String gives the address back in its canonical form, for errors and
// logs: "orders/$DeadLetterQueue/$management".
func (a address) String() string {
	if a.kind == nodeCBS {
		return segCBS
	}
	s := a.path
	switch a.subQueue {
	case minibus.SubQueueDeadLetter:
		s += "/" + segDeadLetter
	case minibus.SubQueueTransfer:
		s += "/" + segTransfer + "/" + segDeadLetter
	}
	if a.kind == nodeManagement {
		s += "/" + segManagement
	}
	return s
}
