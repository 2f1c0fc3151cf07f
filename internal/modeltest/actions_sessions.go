package modeltest

// The actions on sessions: accepting one, by id or the next, its state, its
// lock and the list of sessions (SEMANTICS SS1–SS8).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/minibus-go/minibus"
	"pgregory.net/rapid"
)

// sessionAPI is what a session-enabled Queue and Subscription share.
type sessionAPI interface {
	AcceptSession(context.Context, string, *minibus.SessionReceiverOptions) (*minibus.SessionReceiver, error)
	AcceptNextSession(context.Context, *minibus.SessionReceiverOptions) (*minibus.SessionReceiver, error)
}

func sessionHandle(he *hEnt) sessionAPI {
	if he.q != nil {
		return he.q
	}
	return he.s
}

func sessionOpts(rad bool) *minibus.SessionReceiverOptions {
	if rad {
		return &minibus.SessionReceiverOptions{ReceiveMode: minibus.ReceiveModeReceiveAndDelete}
	}
	return nil
}

// accept is AcceptSession of session id of he: the session is held for
// LockDuration, messages or not (SS2).
func (h *machine) accept(t *rapid.T, he *hEnt, id string, rad bool) *hRecv {
	s, err := sessionHandle(he).AcceptSession(h.ctx, id, sessionOpts(rad))
	mr, merr := h.m.acceptSession(he.m, id, rad)
	h.errs(t, fmt.Sprintf("AcceptSession(%.10q) on %v", id, he.m), err, merr)
	if err != nil {
		skip("no session")
	}
	return h.accepted(t, s, mr)
}

// accepted checks a session receiver the broker handed out and keeps it.
func (h *machine) accepted(t *rapid.T, s *minibus.SessionReceiver, mr *mReceiver) *hRecv {
	if s.SessionID() != mr.sess || !s.LockedUntil().Equal(tm(mr.e.held[mr.sess].until)) {
		t.Fatalf("session receiver of %v reads session %q until %v, model says %q until %v (SS2)",
			mr.e, s.SessionID(), s.LockedUntil(), mr.sess, tm(mr.e.held[mr.sess].until))
	}
	hr := &hRecv{r: s, sess: s, m: mr}
	h.recvs = append(h.recvs, hr)
	if mr.e.state[mr.sess] != nil && !chance(t, "skipState", 4) {
		h.getState(t, hr) // kept for the session, whoever set it (SS6)
	}
	return hr
}

// drawSessionID draws a session id: mostly one the messages use.
func drawSessionID(t *rapid.T) string {
	if chance(t, "oddSession", 20) {
		return Pick(t, "session", "", "z", strings.Repeat("s", 129))
	}
	return Pick(t, "session", mSessionIDs...)
}

// acceptSession accepts a session by id: held ones refuse
// (ErrSessionCannotBeLocked), entities without sessions too
// (ErrInvalidArgument).
func (h *machine) acceptSession(t *rapid.T) {
	h.accept(t, h.sessionEntity(t), drawSessionID(t), chance(t, "rad", 5))
}

// acceptNextSession accepts the session whose first available message is
// oldest (SS3); with none, a very short real deadline shows that it waits.
func (h *machine) acceptNextSession(t *rapid.T) {
	he := h.sessionEntity(t)
	rad := chance(t, "rad", 5)
	mr, wouldBlock, merr := h.m.acceptNext(he.m, rad)
	what := fmt.Sprintf("AcceptNextSession on %v", he.m)
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	if wouldBlock {
		cancel()
		ctx, cancel = context.WithTimeout(h.ctx, 2*time.Millisecond)
		merr = context.DeadlineExceeded
	}
	s, err := sessionHandle(he).AcceptNextSession(ctx, sessionOpts(rad))
	cancel()
	h.errs(t, what, err, merr)
	if err == nil {
		h.accepted(t, s, mr)
	}
}

// blockedAcceptNext blocks an AcceptNextSession where no session can be
// taken, moves the clock onto the first instant that can change what it
// sees (wakeDeadline: a deadline of the entity, or a forward arriving),
// and expects it to wake with the session the model takes then, or to wait
// still (SS3, T5).
func (h *machine) blockedAcceptNext(t *rapid.T) {
	he := h.sessionEntity(t)
	if !h.m.acceptBlocks(he.m) {
		skip("AcceptNextSession would not block")
	}
	to := h.m.wakeDeadline(he.m)
	if to == mNever {
		skip("nothing pending")
	}
	rad := chance(t, "rad", 5)
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	done := make(chan acceptResult, 1)
	go func() {
		s, err := sessionHandle(he).AcceptNextSession(ctx, sessionOpts(rad))
		done <- acceptResult{s, err}
	}()
	h.jump(to)
	mr, wouldBlock, merr := h.m.acceptNext(he.m, rad)
	what := fmt.Sprintf("blocked AcceptNextSession on %v, clock moved to +%v", he.m, time.Duration(to-epoch.UnixNano()))
	if wouldBlock {
		cancel()
	}
	res, ok := awaitBlocked(h.clk, done, 10*time.Second)
	if !ok {
		t.Fatalf("%s: still blocked after 10 s, the model says it woke (T5); the clock at +%v, the broker's goroutines:\n%s",
			what, h.clk.Now().Sub(epoch), brokerStacks())
	}
	if wouldBlock {
		if !errors.Is(res.err, context.Canceled) {
			t.Fatalf("%s: no session became available, broker returned %v", what, res.err)
		}
		return
	}
	h.errs(t, what, res.err, merr)
	if res.err == nil {
		h.accepted(t, res.s, mr)
		h.tally["blocked accepts woken by time"]++
	}
}

type acceptResult struct {
	s   *minibus.SessionReceiver
	err error
}

// sessionReceiver draws a session receiver: open or not, holding its
// session or not, or a new one.
func (h *machine) sessionReceiver(t *rapid.T) *hRecv {
	var open, other []*hRecv
	for _, r := range h.recvs {
		switch {
		case r.sess == nil:
		case !r.m.closed && !h.m.lost(r.m):
			open = append(open, r)
		default:
			other = append(other, r)
		}
	}
	if len(other) > 0 && (len(open) == 0 || chance(t, "staleSession", 6)) {
		return Pick(t, "receiver", other...)
	}
	if len(open) == 0 || chance(t, "newSession", 6) {
		return h.accept(t, h.sessionEntity(t), drawSessionID(t), chance(t, "rad", 5))
	}
	return Pick(t, "receiver", open...)
}

// closeSession closes a session receiver that holds locked messages: they
// return without counting a delivery (SS5). With none, it accepts a
// session with available messages, receives some and now and then sets
// its state first.
func (h *machine) closeSession(t *rapid.T) {
	var holding []*hRecv
	for _, r := range h.recvs {
		if r.sess != nil && !r.m.closed && !h.m.lost(r.m) && len(sessionLocked(r.m.e, r.m.sess)) > 0 {
			holding = append(holding, r)
		}
	}
	var r *hRecv
	if len(holding) > 0 {
		r = Pick(t, "receiver", holding...)
	} else {
		r = h.sessionWithLocks(t)
	}
	if err := r.r.Close(h.ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	h.m.closeReceiver(r.m)
	_, err := r.sess.GetSessionState(h.ctx, nil)
	h.errs(t, "GetSessionState on a closed session receiver", err, minibus.ErrClosed)
}

// sessionWithLocks accepts an unheld session with an available message in
// peek-lock mode and receives from it.
func (h *machine) sessionWithLocks(t *rapid.T) *hRecv {
	var srcs []source
	for _, s := range h.sources(func(x *mMsg) bool { return x.state == mAvail }) {
		if s.isSess && s.he.m.held[s.sess] == nil {
			srcs = append(srcs, s)
		}
	}
	if len(srcs) == 0 {
		skip("no session to take")
	}
	s := Pick(t, "source", srcs...)
	r := h.accept(t, s.he, s.sess, false)
	h.receiveFrom(t, r)
	if chance(t, "setState", 2) {
		state := []byte(fmt.Sprintf("step-%d", h.bodies))
		h.errs(t, "SetSessionState before Close", r.sess.SetSessionState(h.ctx, state, nil), h.m.setState(r.m, state))
	}
	return r
}

// sessionState gets or sets a session's state (SS6).
func (h *machine) sessionState(t *rapid.T) {
	r := h.sessionReceiver(t)
	what := fmt.Sprintf("session state of %s", describe(r.m))
	if chance(t, "setState", 2) {
		state := Pick(t, "state", []byte(nil), []byte{}, []byte("s1"), []byte("step-2"))
		err := r.sess.SetSessionState(h.ctx, state, nil)
		h.errs(t, "Set"+what, err, h.m.setState(r.m, state))
		if len(state) > 0 {
			state[0] = 'X' // the broker keeps its own copy (V4)
		}
		if !chance(t, "readBack", 2) {
			return
		}
	}
	h.getState(t, r)
}

// getState compares GetSessionState (SS6): a copy, nil when never set or
// cleared.
func (h *machine) getState(t *rapid.T, r *hRecv) {
	what := fmt.Sprintf("GetSessionState of %s", describe(r.m))
	got, err := r.sess.GetSessionState(h.ctx, nil)
	want, merr := h.m.getState(r.m)
	h.errs(t, what, err, merr)
	if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
		t.Fatalf("%s = %q (nil %v), model says %q (nil %v) (SS6)", what, got, got == nil, want, want == nil)
	}
	if want != nil {
		h.m.hits.SessionStateKept++
	}
	if len(got) > 0 {
		got[0] = 'Y' // the broker handed out a copy (V4)
	}
}

// renewSession renews a session's lock, and its messages' (SS8); renewing
// a message of a session is ErrInvalidArgument (SS7, settle).
func (h *machine) renewSession(t *rapid.T) {
	r := h.sessionReceiver(t)
	if chance(t, "renewLater", 2) && !r.m.closed && !h.m.lost(r.m) && !r.m.e.deleted {
		h.jump(h.m.now + (r.m.e.held[r.m.sess].until-h.m.now)/2)
	}
	err := r.sess.RenewSessionLock(h.ctx, nil)
	until, merr := h.m.renewSession(r.m)
	what := fmt.Sprintf("RenewSessionLock of %s", describe(r.m))
	h.errs(t, what, err, merr)
	if err == nil && !r.sess.LockedUntil().Equal(tm(until)) {
		t.Fatalf("%s: LockedUntil() = %v, model says %v (SS8)", what, r.sess.LockedUntil(), tm(until))
	}
}

// listSessions lists the sessions of any queue or subscription:
// ErrInvalidArgument without sessions (Check lists those with).
func (h *machine) listSessions(t *rapid.T) {
	he := h.entity(t, mQueue, mSub)
	var err error
	if he.q != nil {
		_, err = he.q.ListSessions(h.ctx)
	} else {
		_, err = he.s.ListSessions(h.ctx)
	}
	_, merr := h.m.listSessions(he.m)
	h.errs(t, "ListSessions on "+he.m.String(), err, merr)
}
