package server

import (
	"math"
	"strconv"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/amqp"
)

// mgmtRequest is one decoded $management request.
type mgmtRequest struct {
	op    string   // the operation, for errors
	body  amqp.Map // the amqp-value map; empty when absent
	assoc string   // associated-link-name
}

// parseRequest reads a request's operation, associated link and, with
// mapBody, its body, which must then be an amqp-value map or absent.
func parseRequest(req *amqp.Message, mapBody bool) (mgmtRequest, error) {
	if req == nil {
		return mgmtRequest{}, failf(minibus.ErrInvalidArgument, "request", "nil")
	}
	v, ok := req.ApplicationProperties.GetString(propOperation)
	if !ok || v == nil {
		return mgmtRequest{}, failf(minibus.ErrInvalidArgument, "request", "application property %q: missing", propOperation)
	}
	var q mgmtRequest
	switch op := v.(type) {
	case string:
		q.op = op
	case amqp.Symbol:
		q.op = string(op)
	default:
		return mgmtRequest{}, failf(minibus.ErrInvalidArgument, "request", "application property %q: %s (want a string)", propOperation, amqpTypeName(v))
	}
	if v, ok := req.ApplicationProperties.GetString(propAssociatedLinkName); ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return mgmtRequest{}, failf(minibus.ErrInvalidArgument, q.op, "application property %q: %s (want a string)", propAssociatedLinkName, amqpTypeName(v))
		}
		q.assoc = s
	}
	if mapBody && req.HasValue && req.Value != nil {
		b, ok := req.Value.(amqp.Map)
		if !ok {
			return mgmtRequest{}, failf(minibus.ErrInvalidArgument, q.op, "body: an amqp-value of %s (want a map)", amqpTypeName(req.Value))
		}
		q.body = b
	}
	return q, nil
}

// rpcReply builds a $management or $cbs reply (SEMANTICS W3).
func rpcReply(req *amqp.Message, status int32, desc string, body amqp.Map) *amqp.Message {
	if desc == "" {
		desc = mgmtStatusText(status)
	}
	props := &amqp.Properties{}
	if req != nil && req.Properties != nil {
		props.CorrelationID = req.Properties.MessageID
		if props.CorrelationID == nil {
			props.CorrelationID = req.Properties.CorrelationID
		}
		props.To = req.Properties.ReplyTo
	}
	if body == nil {
		body = amqp.Map{}
	}
	return &amqp.Message{
		Properties: props,
		ApplicationProperties: amqp.Map{
			{Key: "status-code", Value: status},
			{Key: "statusCode", Value: status},
			{Key: "status-description", Value: desc},
			{Key: "statusDescription", Value: desc},
		},
		Value:    body,
		HasValue: true,
	}
}

// rpcErrorReply is the reply carrying err: its status (statusCode), its text,
// and its condition as error-condition, which the JavaScript SDK prefers to
// the status when it maps the error.
func rpcErrorReply(req *amqp.Message, err error) *amqp.Message {
	r := rpcReply(req, statusCode(err), errorDescription(err), nil)
	r.ApplicationProperties = append(r.ApplicationProperties, amqp.KV{Key: "error-condition", Value: errorCondition(err)})
	return r
}

// mgmtStatusText is the description of a successful status.
func mgmtStatusText(status int32) string {
	switch status {
	case 200:
		return "OK"
	case 204:
		return "No Content"
	}
	return "Status " + strconv.Itoa(int(status))
}

// fail is an ErrInvalidArgument naming the operation.
func (q mgmtRequest) fail(format string, args ...any) error {
	return failf(minibus.ErrInvalidArgument, q.op, format, args...)
}

// missing says field key is missing.
func (q mgmtRequest) missing(key string) error { return q.fail("field %q: missing", key) }

// mistyped says field key holds v instead of what it should.
func (q mgmtRequest) mistyped(key string, v any, want string) error {
	return q.fail("field %q: %s (want %s)", key, amqpTypeName(v), want)
}

// str reads a string field (a symbol is accepted; null is absent).
func (q mgmtRequest) str(key string, required bool) (string, error) {
	v, ok := q.body.GetString(key)
	if !ok || v == nil {
		if required {
			return "", q.missing(key)
		}
		return "", nil
	}
	switch s := v.(type) {
	case string:
		if required && s == "" {
			return "", q.fail("field %q: empty", key)
		}
		return s, nil
	case amqp.Symbol:
		return string(s), nil
	}
	return "", q.mistyped(key, v, "a string")
}

// boolean reads an optional boolean field.
func (q mgmtRequest) boolean(key string) (bool, error) {
	v, ok := q.body.GetString(key)
	if !ok || v == nil {
		return false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, q.mistyped(key, v, "a boolean")
	}
	return b, nil
}

// integer reads an optional integer field of any AMQP integer type, within
// [lo, hi]; ok says whether it was there.
func (q mgmtRequest) integer(key string, lo, hi int64) (n int64, ok bool, err error) {
	v, ok := q.body.GetString(key)
	if !ok || v == nil {
		return 0, false, nil
	}
	n, isInt := amqpInt64(v)
	if !isInt {
		return 0, false, q.mistyped(key, v, "an integer")
	}
	if n < lo || n > hi {
		return 0, false, q.fail("field %q: %d out of range [%d, %d]", key, n, lo, hi)
	}
	return n, true, nil
}

// requiredInteger reads an integer field that must be there.
func (q mgmtRequest) requiredInteger(key string, lo, hi int64) (int64, error) {
	n, ok, err := q.integer(key, lo, hi)
	if err == nil && !ok {
		err = q.missing(key)
	}
	return n, err
}

// amqpInt64 gives an AMQP integer as an int64; ok is false for other types
// and for a ulong too large.
func amqpInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint64:
		if n <= math.MaxInt64 {
			return int64(n), true
		}
	}
	return 0, false
}

// int64s reads a required field holding an array (or list) of longs.
func (q mgmtRequest) int64s(key string) ([]int64, error) {
	v, ok := q.body.GetString(key)
	if !ok || v == nil {
		return nil, q.missing(key)
	}
	switch a := v.(type) {
	case []int64:
		return a, nil
	case []int32:
		out := make([]int64, len(a))
		for i, n := range a {
			out[i] = int64(n)
		}
		return out, nil
	case []any:
		out := make([]int64, len(a))
		for i, e := range a {
			n, ok := amqpInt64(e)
			if !ok {
				return nil, q.mistyped(key+"["+strconv.Itoa(i)+"]", e, "a long")
			}
			out[i] = n
		}
		return out, nil
	}
	return nil, q.mistyped(key, v, "an array of longs")
}

// uuids reads a required, non-empty field holding an array (or list) of
// uuids.
func (q mgmtRequest) uuids(key string) ([][16]byte, error) {
	v, ok := q.body.GetString(key)
	if !ok || v == nil {
		return nil, q.missing(key)
	}
	var out [][16]byte
	switch a := v.(type) {
	case []amqp.UUID:
		out = make([][16]byte, len(a))
		for i, u := range a {
			out[i] = u
		}
	case []any:
		out = make([][16]byte, len(a))
		for i, e := range a {
			u, ok := e.(amqp.UUID)
			if !ok {
				return nil, q.mistyped(key+"["+strconv.Itoa(i)+"]", e, "a uuid")
			}
			out[i] = u
		}
	default:
		return nil, q.mistyped(key, v, "an array of uuids")
	}
	if len(out) == 0 {
		return nil, q.fail("field %q: empty", key)
	}
	return out, nil
}

// properties reads an optional map of properties (properties-to-modify).
func (q mgmtRequest) properties(key string) (map[string]any, error) {
	v, ok := q.body.GetString(key)
	if !ok || v == nil {
		return nil, nil
	}
	m, ok := v.(amqp.Map)
	if !ok {
		return nil, q.mistyped(key, v, "a map")
	}
	props, err := propertiesFromAMQP(m, "field "+quoteName(key)+": property")
	if err != nil {
		return nil, q.fail("%v", err)
	}
	return props, nil
}
