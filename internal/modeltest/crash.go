package modeltest

// The model of a power cut and the next Open of a durable namespace
// (README's Durability section): what was acknowledged is there, every
// lock has ended, every receiver is gone.

import (
	"maps"
	"slices"
)

// crash is a power cut at now and the Open that follows at the same
// instant. Every held session is released as if its lock had expired, its
// locked messages ending as in L6 with their delivery counted (SS5); every
// other lock ends as in L6 too, its delivery counted; then what those ends
// forwarded is delivered (F2, D4). The receivers of the old namespace are
// gone: rs are closed. crash reports whether the broker may order the lock
// ends differently, which shows: Open ends them entity by entity in an
// order of its own bookkeeping, and the locked messages of one entity in
// the order of its store, so that two of them forwarding may arrive in
// either order (see ordered).
func (m *refModel) crash(rs []*mReceiver) (ordered bool) {
	m.begin()
	for _, e := range m.all {
		if e.deleted {
			continue
		}
		for _, id := range slices.Sorted(maps.Keys(e.held)) {
			m.release(e, id, m.now, true)
		}
		for _, l := range []*[]*mMsg{&e.main, &e.dlq, &e.tdlq} {
			for _, x := range slices.Clone(*l) {
				if x.state == mLocked {
					m.lockEnded(e, x, m.now)
				}
			}
		}
	}
	ordered = len(m.outbox) <= 1
	m.flush()
	for _, r := range rs {
		r.closed = true
	}
	return ordered
}

// crashOrdered reports whether a crash now leaves a state the broker
// reaches whatever order it ends the locks in: at most one of the lock ends
// forwards a message.
func (m *refModel) crashOrdered() bool {
	return m.clone().crash(nil)
}
