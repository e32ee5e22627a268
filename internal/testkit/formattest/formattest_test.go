package formattest

import (
	"slices"
	"testing"
	"time"
)

type inner struct {
	When time.Time
	N    int
}

type value struct {
	S     string
	B     bool
	In    inner
	List  []inner
	M     map[string]int
	P     *int
	Empty []int
	//lint:ignore U1000 an unexported field, which Unset skips, is the case under test
	low int
}

func TestUnset(t *testing.T) {
	one := 1
	full := value{S: "s", B: true, In: inner{time.Unix(1, 0), 1}, List: []inner{{time.Unix(1, 0), 1}}, M: map[string]int{"a": 1}, P: &one, Empty: []int{1}}
	if got := Unset(full); len(got) != 0 {
		t.Errorf("Unset(full) = %v", got)
	}
	got := Unset(value{In: inner{N: 1}, List: []inner{{N: 1}}, Empty: []int{}})
	want := []string{"value.S", "value.B", "value.In.When", "value.List[0].When", "value.M", "value.P", "value.Empty"}
	if !slices.Equal(got, want) {
		t.Errorf("Unset = %v, want %v", got, want)
	}
}

func TestWithVersion(t *testing.T) {
	b, err := withVersion([]byte(`{"formatVersion":1,"a":[1]}`), 7)
	if err != nil || string(b) != `{"a":[1],"formatVersion":7}` {
		t.Errorf("withVersion = %s, %v", b, err)
	}
	if _, err := withVersion([]byte(`[1]`), 2); err == nil {
		t.Error("withVersion of an array: no error")
	}
	if _, err := withVersion([]byte(`{"a":1}`), 2); err == nil {
		t.Error("withVersion without formatVersion: no error")
	}
}
