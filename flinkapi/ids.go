package flinkapi

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// JobID identifies a Flink job: 32 lower-case hexadecimal characters, as
// Flink prints it. The zero value means "no job".
type JobID string

// TriggerID identifies an asynchronous operation (savepoint, stop,
// checkpoint, disposal) of the JobManager: 32 hexadecimal characters.
type TriggerID string

// JarID identifies a jar uploaded to a session cluster: the file name Flink
// gave the upload, such as "3f2c..._job.jar".
type JarID string

// NewJobID returns a random job id. Submitting with a job id chosen by the
// caller is what makes a retried submission detectable (see RunJar).
func NewJobID() JobID { return JobID(randomHex()) }

// NewTriggerID returns a random trigger id. Sending the same trigger id again
// makes a retried trigger a no-op on Flink 1.15 and later.
func NewTriggerID() TriggerID { return TriggerID(randomHex()) }

func randomHex() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand.Read never fails on supported platforms (Go 1.24+).
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// ParseJobID checks that s is a job id (32 hexadecimal characters) and
// returns it in Flink's lower-case form.
func ParseJobID(s string) (JobID, error) {
	if err := checkHex32("job id", s); err != nil {
		return "", err
	}
	return JobID(strings.ToLower(s)), nil
}

// ParseTriggerID checks that s is a trigger id (32 hexadecimal characters).
func ParseTriggerID(s string) (TriggerID, error) {
	if err := checkHex32("trigger id", s); err != nil {
		return "", err
	}
	return TriggerID(strings.ToLower(s)), nil
}

// Validate reports whether id is a well-formed job id.
func (id JobID) Validate() error { return checkHex32("job id", string(id)) }

// Validate reports whether id is a well-formed trigger id.
func (id TriggerID) Validate() error { return checkHex32("trigger id", string(id)) }

// Validate reports whether id is a jar id Flink could have issued: a plain
// file name ending in ".jar", with no path separators.
func (id JarID) Validate() error {
	s := string(id)
	switch {
	case s == "":
		return invalidInput("jar id is empty")
	case len(s) > 255:
		return invalidInput("jar id is %d characters long; at most 255 are allowed", len(s))
	case !strings.HasSuffix(s, ".jar") || s == ".jar":
		return invalidInput("jar id %q must be a file name ending in .jar", s)
	case s == ".." || strings.ContainsAny(s, "/\\?#%") || strings.Contains(s, ".."):
		return invalidInput("jar id %q must be a plain file name (no '/', '\\', '..', '?', '#' or '%%')", s)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return invalidInput("jar id %q contains a control character", s)
		}
	}
	return nil
}

func checkHex32(what, s string) error {
	if len(s) != 32 {
		return invalidInput("%s %q must be 32 hexadecimal characters, got %d characters", what, truncate(s, 64), len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return invalidInput("%s %q must be 32 hexadecimal characters; %q at position %d is not one", what, s, c, i)
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n-- // never half a character
	}
	return s[:n] + "..."
}

// invalidInput builds an error that matches ErrInvalidInput.
func invalidInput(format string, args ...any) error {
	return &inputError{msg: fmt.Sprintf(format, args...)}
}

type inputError struct{ msg string }

// inputMessage returns the message of an input error without the
// "flinkapi: invalid input: " in front, for an error about an answer.
func inputMessage(err error) string {
	var ie *inputError
	if errors.As(err, &ie) {
		return ie.msg
	}
	return err.Error()
}

func (e *inputError) Error() string        { return "flinkapi: invalid input: " + e.msg }
func (e *inputError) Is(target error) bool { return target == ErrInvalidInput }
