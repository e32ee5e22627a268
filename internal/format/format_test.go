package format

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, v := range []int{0, 1, 2} {
		if err := Check("x.T", v, 2); err != nil {
			t.Errorf("Check(%d, newest 2) = %v, want nil", v, err)
		}
	}
	for _, v := range []int{3, 99, -1} {
		err := Check("x.T", v, 2)
		var fe *Error
		if !errors.Is(err, ErrUnknown) || !errors.As(err, &fe) || fe.Version != v || fe.Newest != 2 {
			t.Fatalf("Check(%d, newest 2) = %v, want an *Error matching ErrUnknown", v, err)
		}
		if !strings.HasPrefix(err.Error(), "x.T: format version ") {
			t.Errorf("message %q does not name the type and the version", err)
		}
	}
}
