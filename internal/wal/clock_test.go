package wal

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNoWallClock keeps the package on the injected clock: no non-test
// file calls the time functions that read or wait on the wall clock.
func TestNoWallClock(t *testing.T) {
	banned := map[string]bool{"Now": true, "Sleep": true, "After": true, "AfterFunc": true,
		"NewTimer": true, "NewTicker": true, "Since": true, "Until": true, "Tick": true}
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "time" && banned[sel.Sel.Name] {
					t.Errorf("%s: time.%s bypasses Options.Clock", fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
	require.Greater(t, checked, 5)
}
