package fencecheck_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck"
	"github.com/fencecheck/fencecheck/impl"
	"github.com/fencecheck/fencecheck/model"
)

// A broker's own test runs fencecheck's properties against it. Here the
// broker is fencecheck's optimised one with a seeded bug: it accepts a
// produce at an epoch that has been fenced. In a broker's own repository
// the call is the same, with t from its test and its own constructor:
//
//	func TestFencing(t *testing.T) {
//		fencecheck.Test(t, newMyBroker, fencecheck.Options{})
//	}
func ExampleTest() {
	buggy := func() (model.Target, error) {
		return impl.New(impl.Config{TxnVersion: 2, Mutants: map[string]bool{"no-epoch-check": true}}), nil
	}
	t := &firstLines{}
	fencecheck.Test(t, buggy, fencecheck.Options{Scenarios: []string{"stable-id"}, Checks: 100, Seed: 4})
	fmt.Println("failed:", t.failed)
	fmt.Println(t.errors[0])
	// Output:
	// failed: true
	// fencecheck: stable-id: VIOLATION, shrunk to 8 operations
}

// firstLines is a testing.TB that keeps the first clause of each error.
type firstLines struct {
	testing.TB
	failed bool
	errors []string
}

func (f *firstLines) Helper()                           {}
func (f *firstLines) Logf(string, ...any)               {}
func (f *firstLines) Log(...any)                        {}
func (f *firstLines) Errorf(format string, args ...any) { f.Error(fmt.Sprintf(format, args...)) }
func (f *firstLines) Error(args ...any) {
	f.failed = true
	first, _, _ := strings.Cut(fmt.Sprint(args...), ";")
	f.errors = append(f.errors, first)
}
func (f *firstLines) Fatalf(format string, args ...any) { f.Errorf(format, args...) }
