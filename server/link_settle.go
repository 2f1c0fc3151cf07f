package server

import (
	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/internal/amqp"
)

// settle applies the peer's outcome to a delivered message (W6) and
// returns the outcome this side answers with: the same outcome type (a
// bare Rejected for a dead-letter), or Rejected with the error that kept
// it from taking effect (lock lost).
func (l *outLink) settle(m *minibus.ReceivedMessage, state amqp.DeliveryState) amqp.DeliveryState {
	ctx := l.s.c.ctx
	var err error
	var reply amqp.DeliveryState
	switch st := state.(type) {
	case *amqp.Accepted:
		err, reply = l.recv.CompleteMessage(ctx, m, nil), st
	case *amqp.Released:
		err, reply = l.recv.ReleaseMessage(ctx, m, nil), st
	case *amqp.Modified:
		// delivery-failed changes nothing: abandoning counts the delivery
		// already (W6).
		var props map[string]any
		if props, err = modifyProperties(st.MessageAnnotations); err == nil {
			if st.UndeliverableHere {
				err = l.recv.DeferMessage(ctx, m, &minibus.DeferMessageOptions{PropertiesToModify: props})
			} else {
				err = l.recv.AbandonMessage(ctx, m, &minibus.AbandonMessageOptions{PropertiesToModify: props})
			}
		}
		reply = &amqp.Modified{DeliveryFailed: st.DeliveryFailed, UndeliverableHere: st.UndeliverableHere}
	case *amqp.Rejected:
		var o *minibus.DeadLetterOptions
		if o, err = deadLetterOptions(st.Error); err == nil {
			err = l.recv.DeadLetterMessage(ctx, m, o)
		}
		reply = &amqp.Rejected{}
	}
	if err != nil {
		l.s.c.log.Debug("minibus server: settlement refused", "link", l.name, "sequence-number", m.SequenceNumber, "error", err)
		return &amqp.Rejected{Error: linkError(err)}
	}
	return reply
}

// modifyProperties reads PropertiesToModify from a modified outcome's
// message annotations (W6).
func modifyProperties(m amqp.Map) (map[string]any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	return appProperties(m)
}

// appProperties reads properties to modify from an outcome (W6).
func appProperties(m amqp.Map) (map[string]any, error) {
	p, err := propertiesFromAMQP(m, "property to modify")
	if err != nil {
		return nil, failf(minibus.ErrInvalidArgument, "settlement", "%v", err)
	}
	return p, nil
}

// deadLetterOptions reads a dead-letter outcome (W6): the reason and
// description from the error's info, the rest of the info as
// PropertiesToModify. A rejected outcome without com.microsoft:dead-letter
// dead-letters with its condition as the reason.
func deadLetterOptions(e *amqp.Error) (*minibus.DeadLetterOptions, error) {
	o := &minibus.DeadLetterOptions{}
	if e == nil {
		return o, nil
	}
	if e.Condition != deadLetterCond {
		o.Reason, o.ErrorDescription = string(e.Condition), e.Description
	}
	var rest amqp.Map
	for _, kv := range e.Info {
		k, _ := keyString(kv.Key)
		switch k {
		case "DeadLetterReason":
			o.Reason, _ = kv.Value.(string)
		case "DeadLetterErrorDescription":
			o.ErrorDescription, _ = kv.Value.(string)
		default:
			rest = append(rest, kv)
		}
	}
	if len(rest) > 0 {
		props, err := appProperties(rest)
		if err != nil {
			return nil, err
		}
		o.PropertiesToModify = props
	}
	return o, nil
}

// keyString is a map key as a string, whether sent as a string or a symbol.
func keyString(k any) (string, bool) {
	switch k := k.(type) {
	case string:
		return k, true
	case amqp.Symbol:
		return string(k), true
	}
	return "", false
}
