// Command exported counts the module's public surface: the exported
// top-level identifiers (functions, methods of exported types, types,
// variables, constants) of each package that another module can import.
// Packages under internal/, commands and tests are left out.
//
//	go run ./scripts/exported
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"sort"
	"strings"
)

func main() {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Name}} {{.Dir}}", "./...").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "exported: go list:", err)
		os.Exit(2)
	}
	total := 0
	var rows []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		path, name, dir := f[0], f[1], f[2]
		if name == "main" || strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal") {
			continue
		}
		n, err := countExported(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "exported:", err)
			os.Exit(2)
		}
		total += n
		rows = append(rows, fmt.Sprintf("%5d  %s", n, path))
	}
	sort.Strings(rows)
	for _, r := range rows {
		fmt.Println(r)
	}
	fmt.Printf("%5d  in all\n", total)
}

// countExported counts the exported top-level identifiers of the package
// in dir, its tests left out.
func countExported(dir string) (int, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, pkg := range pkgs {
		for _, file := range pkg.Files {
			n += exportedIn(file)
		}
	}
	return n, nil
}

func exportedIn(file *ast.File) int {
	n := 0
	for _, decl := range file.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && (d.Recv == nil || receiverExported(d.Recv)) {
				n++
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						n++
					}
				case *ast.ValueSpec:
					for _, name := range s.Names {
						if name.IsExported() {
							n++
						}
					}
				}
			}
		}
	}
	return n
}

func receiverExported(recv *ast.FieldList) bool {
	t := recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	if idx, ok := t.(*ast.IndexExpr); ok {
		t = idx.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}
