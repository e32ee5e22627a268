package plaincheck

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

type inner struct {
	When time.Time
	N    [2]int
}

type plain struct {
	A string
	B inner
}

type shared struct {
	A  *int
	B  []string
	C  map[string]int
	D  any
	E  inner
	F  [1]*int
	OK *inner
	//lint:ignore U1000 an unexported field is the case under test
	low int
}

func TestProblems(t *testing.T) {
	if p := Problems("plain", reflect.TypeFor[plain]()); len(p) != 0 {
		t.Fatalf("plain type: %v", p)
	}
	got := Problems("shared", reflect.TypeFor[shared](), "shared.OK")
	want := []string{"shared.A is a ptr", "shared.B is a slice", "shared.C is a map", "shared.D is a interface", "shared.F[i] is a ptr", "shared.low is unexported"}
	if len(got) != len(want) {
		t.Fatalf("got %d problems %v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d = %q, want it to start with %q", i, got[i], want[i])
		}
	}
}
