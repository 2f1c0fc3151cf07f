package minibus

// Hooks for the black-box tests of this folder: what no public call shows.

// DuplicateHistory returns how many MessageIDs q remembers for duplicate
// detection (SEMANTICS DD1), as of now.
func DuplicateHistory(q *Queue) int { return q.e.DuplicateHistory() }
