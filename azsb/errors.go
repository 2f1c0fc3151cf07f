package azsb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/Azure/go-amqp"
	"github.com/minibus-go/minibus"
)

// sdkError is an error azsb returns: its text is the SDK's way of saying it
// followed by minibus's detail, and it unwraps to both the error the SDK
// would return (an *azservicebus.Error, an *amqp.Error,
// azservicebus.ErrMessageTooLarge or an *azcore.ResponseError) and the
// minibus error behind it, so that errors.As and errors.Is find either.
type sdkError struct {
	text string
	errs []error
}

// Error returns the SDK's text of the error and minibus's detail.
func (e *sdkError) Error() string { return e.text }

// Unwrap gives the SDK's error and the minibus error, for errors.Is and
// errors.As.
func (e *sdkError) Unwrap() []error { return e.errs }

// Texts of the errors the SDK makes on the client side, copied so that code
// matching on them behaves the same.
const (
	textMaxMessagesLow   = "maxMessages should be greater than 0"
	textAlreadyReceiving = "receiver is already receiving messages. ReceiveMessages() cannot be called concurrently"
	textNotSettleable    = "messages that are received in `ReceiveModeReceiveAndDelete` mode are not settleable"
	textClientClosed     = "client has been closed by user"
	textNoEntity         = "a queue or subscription was not specified"
	textNoMessages       = "expected one or more messages"
	// The service's texts for a session entity used without sessions and the
	// reverse (AMQP condition amqp:not-allowed).
	textSessionIDMissing = "The SessionId was not set on a message, and it cannot be sent to the entity. Entities that have session support enabled can only receive messages that have the SessionId set to a valid value."
	textSessionReceiver  = "It is not possible for an entity that requires sessions to create a non-sessionful message receiver."
	textNotSessionful    = "A sessionful message receiver cannot be created on an entity that does not require sessions. Ensure RequiresSession is set to true when creating a Queue or Subscription to enable sessionful behavior."
)

// maxReceiveMessages is the SDK's limit on ReceiveMessages' maxMessages (its
// link credit).
const maxReceiveMessages = 5000

// clientError is an error the SDK makes itself, before any broker call: its
// text is exactly the SDK's, and it wraps minibus.ErrInvalidArgument (or
// the sentinel given).
func clientError(sentinel error, text string) error {
	return &sdkError{text: text, errs: []error{sentinel}}
}

// closedError is what a closed Client, Sender or Receiver returns: an
// *azservicebus.Error with CodeClosed that is also minibus.ErrClosed.
func closedError(what string) error {
	return withCode(azservicebus.CodeClosed, fmt.Errorf("azsb: %s is closed: %w", what, minibus.ErrClosed))
}

// withCode wraps err in an *azservicebus.Error with code, as the SDK's
// internal.TransformError does, keeping err reachable.
func withCode(code azservicebus.Code, err error) error {
	return &sdkError{
		text: fmt.Sprintf("(%s): %s", code, err.Error()),
		errs: []error{&azservicebus.Error{Code: code}, err},
	}
}

// withCondition wraps err in the *amqp.Error with condition the service
// returns, keeping err reachable. description defaults to err's text.
func withCondition(cond amqp.ErrCond, description string, err error) error {
	text := fmt.Sprintf("%s: %s", cond, err.Error())
	if description == "" {
		description = err.Error()
	} else {
		text = fmt.Sprintf("%s: %s (%s)", cond, description, err.Error())
	}
	ae := &amqp.Error{Condition: cond, Description: description}
	return &sdkError{text: text, errs: []error{ae, err}}
}

// tooLarge is the SDK's answer to a message larger than the entity takes:
// azservicebus.ErrMessageTooLarge, also the *amqp.Error the link reports.
func tooLarge(err error) error {
	return &sdkError{
		text: azservicebus.ErrMessageTooLarge.Error() + ": " + err.Error(),
		errs: []error{azservicebus.ErrMessageTooLarge, &amqp.Error{Condition: amqp.ErrCondMessageSizeExceeded, Description: err.Error()}, err},
	}
}

// mapError turns a minibus error from a messaging call into what the SDK
// returns for the same failure:
//
//	minibus                   SDK
//	ErrLockLost               *azservicebus.Error{Code: CodeLockLost}
//	ErrSessionLockLost        *azservicebus.Error{Code: CodeLockLost}
//	ErrNotFound               *azservicebus.Error{Code: CodeNotFound}
//	ErrMessageNotFound        *azservicebus.Error{Code: CodeNotFound}
//	ErrClosed                 *azservicebus.Error{Code: CodeClosed}
//	ErrMessageTooLarge        azservicebus.ErrMessageTooLarge and *amqp.Error amqp:link:message-size-exceeded
//	ErrQuotaExceeded          *amqp.Error amqp:resource-limit-exceeded
//	ErrEntityDisabled         *amqp.Error com.microsoft:entity-disabled
//	ErrSessionCannotBeLocked  *amqp.Error com.microsoft:session-cannot-be-locked
//	context errors            returned unchanged
//	anything else             returned unchanged (minibus's own error)
//
// Every result still wraps the minibus error.
func mapError(err error) error {
	if err == nil {
		return nil
	}
	if _, done := err.(*sdkError); done { // mapped already
		return err
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, minibus.ErrLockLost), errors.Is(err, minibus.ErrSessionLockLost):
		return withCode(azservicebus.CodeLockLost, err)
	case errors.Is(err, minibus.ErrNotFound), errors.Is(err, minibus.ErrMessageNotFound):
		return withCode(azservicebus.CodeNotFound, err)
	case errors.Is(err, minibus.ErrClosed):
		return withCode(azservicebus.CodeClosed, err)
	case errors.Is(err, minibus.ErrMessageTooLarge):
		return tooLarge(err)
	case errors.Is(err, minibus.ErrQuotaExceeded):
		return withCondition(amqp.ErrCondResourceLimitExceeded, "", err)
	case errors.Is(err, minibus.ErrEntityDisabled):
		return withCondition("com.microsoft:entity-disabled", "", err)
	case errors.Is(err, minibus.ErrSessionCannotBeLocked):
		return withCondition("com.microsoft:session-cannot-be-locked", "", err)
	}
	return err
}

// Admin errors: the admin client reports the service's HTTP answer as an
// *azcore.ResponseError. azsb builds the same from a minibus error, with a
// response whose body is the ATOM error document the service sends.

// adminError maps a minibus error from an admin call: ErrNotFound is 404,
// ErrAlreadyExists 409, ErrInvalidArgument 400; anything else is returned
// unchanged. method and path name the request the real client would make.
func adminError(err error, method, path string) error {
	var status int
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, minibus.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, minibus.ErrAlreadyExists):
		status = http.StatusConflict
	case errors.Is(err, minibus.ErrInvalidArgument):
		status = http.StatusBadRequest
	default:
		return err
	}
	return responseError(status, method, path, err)
}

// responseError builds the *azcore.ResponseError of an ATOM reply with
// status, whose Detail is cause's text, wrapped so that cause stays
// reachable.
func responseError(status int, method, path string, cause error) error {
	body := fmt.Sprintf("<Error><Code>%d</Code><Detail>%s</Detail></Error>", status, xmlEscape(cause.Error()))
	u := &url.URL{Scheme: "https", Host: "minibus.servicebus.windows.net", Path: path}
	resp := &http.Response{
		Status:     fmt.Sprintf("%d %s", status, http.StatusText(status)),
		StatusCode: status,
		Header:     http.Header{"Content-Type": []string{"application/xml; charset=utf-8"}},
		Body:       io.NopCloser(strings.NewReader(body)),
		Request:    &http.Request{Method: method, URL: u},
	}
	re := runtime.NewResponseErrorWithErrorCode(resp, fmt.Sprint(status))
	return &sdkError{text: re.Error(), errs: []error{re, cause}}
}

func xmlEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
