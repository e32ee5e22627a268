package savepoint

// Deep copies, in the form controller-gen's object generator writes them, so
// that Kubernetes types embedding these types can be generated and deep
// copied. They are written by hand: controller-gen v0.23.0 generates
// in.TriggerTime.DeepCopyInto(&out.TriggerTime) for time.Time fields, which
// does not compile (time.Time has no such method; it is a value that is safe
// to copy). Every type here holds only values, strings and time.Time, so
// copying the struct copies it deeply, except Record.RecordExtra, which
// Record's DeepCopyInto copies, and History.Records, which History's
// DeepCopyInto copies; TestDeepCopyFieldsArePlain keeps it so.

// DeepCopyInto copies in into out. in must be non-nil.
func (in *Status) DeepCopyInto(out *Status) { *out = *in }

// DeepCopy returns a copy of in, or nil for nil.
func (in *Status) DeepCopy() *Status {
	if in == nil {
		return nil
	}
	out := new(Status)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out, its RecordExtra into one of its own.
// in must be non-nil.
func (in *Record) DeepCopyInto(out *Record) {
	*out = *in
	if in.RecordExtra != nil {
		e := *in.RecordExtra
		out.RecordExtra = &e
	}
}

// DeepCopyInto copies in into out. in must be non-nil.
func (in *RecordExtra) DeepCopyInto(out *RecordExtra) { *out = *in }

// DeepCopy returns a copy of in, or nil for nil.
func (in *RecordExtra) DeepCopy() *RecordExtra {
	if in == nil {
		return nil
	}
	out := new(RecordExtra)
	in.DeepCopyInto(out)
	return out
}

// DeepCopy returns a copy of in, or nil for nil.
func (in *Record) DeepCopy() *Record {
	if in == nil {
		return nil
	}
	out := new(Record)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out. in must be non-nil.
func (in *Progress) DeepCopyInto(out *Progress) { *out = *in }

// DeepCopy returns a copy of in, or nil for nil.
func (in *Progress) DeepCopy() *Progress {
	if in == nil {
		return nil
	}
	out := new(Progress)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out, Records into a backing array of its
// own (and each record's RecordExtra into one of its own). in must be
// non-nil.
func (in *History) DeepCopyInto(out *History) {
	*out = *in
	if in.Records != nil {
		out.Records = make([]Record, len(in.Records))
		for i := range in.Records {
			in.Records[i].DeepCopyInto(&out.Records[i])
		}
	}
}

// DeepCopy returns a copy of in with Records in a backing array of its
// own, or nil for nil.
func (in *History) DeepCopy() *History {
	if in == nil {
		return nil
	}
	out := new(History)
	in.DeepCopyInto(out)
	return out
}
