package server

import (
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/amqp"
)

// The $cbs request's application properties (SEMANTICS W3).
const (
	opPutToken = "put-token"
	propName   = "name"
)

// handleCBS answers one request on the $cbs node (SEMANTICS W3). put-token
// accepts any token: 200 when its audience, the application property name,
// names the namespace (a URI with no path) or an entity that exists (its
// scheme, host, sub-queue and /$management stripped), 404 when it names
// an entity that does not exist, 400 when it is missing or malformed. The
// reply is as for $management: correlation-id the request's message-id in
// its own type, status-code and statusCode, status-description and
// statusDescription. Any other operation is 400 naming it.
func handleCBS(ns *minibus.Namespace, req *amqp.Message) *amqp.Message {
	if err := putToken(ns, req); err != nil {
		return rpcErrorReply(req, err)
	}
	return rpcReply(req, 200, "", nil)
}

// putToken checks a put-token request and the entity its audience names.
func putToken(ns *minibus.Namespace, req *amqp.Message) error {
	q, err := parseRequest(req, false)
	if err != nil {
		return err
	}
	if q.op != opPutToken {
		return failf(minibus.ErrInvalidArgument, "operation "+quoteName(q.op), "unknown on $cbs (want put-token)")
	}
	v, ok := req.ApplicationProperties.GetString(propName)
	if !ok || v == nil {
		return failf(minibus.ErrInvalidArgument, opPutToken, "application property %q (the audience): missing", propName)
	}
	aud, ok := v.(string)
	if !ok {
		return failf(minibus.ErrInvalidArgument, opPutToken, "application property %q: %s (want a string)", propName, amqpTypeName(v))
	}
	p, err := addressPath(aud)
	if err != nil {
		return err
	}
	if p == "" {
		return nil // the namespace itself
	}
	a, err := parseAddress(p)
	if err != nil {
		return err
	}
	if a.kind == nodeCBS {
		return nil
	}
	_, err = a.resolve(ns)
	return err
}
