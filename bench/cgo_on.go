//go:build cgo

package bench

// cgoBuilt says whether this program was built with cgo, which
// mattn/go-sqlite3, goqite's driver, needs (see [GoqitePeer.Missing]).
const cgoBuilt = true
