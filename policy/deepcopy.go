package policy

// Deep copies of the types that hold time.Time, in the form controller-gen's
// object generator writes them. They are written by hand because
// controller-gen v0.23.0 emits in.T.DeepCopyInto(&out.T) for time.Time
// fields, which does not compile: time.Time has no such method and is a
// value that is safe to copy. Apart from Observations.Job and the
// RecordExtra of Observations.LatestSavepoint, these types hold only
// values, strings and time.Time; TestDeepCopy keeps it so.
// zz_generated.deepcopy.go holds the generated copies of the other types.

// DeepCopyInto copies in into out. in must be non-nil.
func (in *Observations) DeepCopyInto(out *Observations) {
	*out = *in
	if in.Job != nil {
		out.Job = in.Job.DeepCopy()
	}
	in.LatestSavepoint.DeepCopyInto(&out.LatestSavepoint)
}

// DeepCopy returns a copy of in, or nil for nil.
func (in *Observations) DeepCopy() *Observations {
	if in == nil {
		return nil
	}
	out := new(Observations)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out. in must be non-nil.
func (in *Job) DeepCopyInto(out *Job) { *out = *in }

// DeepCopy returns a copy of in, or nil for nil.
func (in *Job) DeepCopy() *Job {
	if in == nil {
		return nil
	}
	out := new(Job)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out. in must be non-nil.
func (in *Checkpoint) DeepCopyInto(out *Checkpoint) { *out = *in }

// DeepCopy returns a copy of in, or nil for nil.
func (in *Checkpoint) DeepCopy() *Checkpoint {
	if in == nil {
		return nil
	}
	out := new(Checkpoint)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out. in must be non-nil.
func (in *RestorePoint) DeepCopyInto(out *RestorePoint) { *out = *in }

// DeepCopy returns a copy of in, or nil for nil.
func (in *RestorePoint) DeepCopy() *RestorePoint {
	if in == nil {
		return nil
	}
	out := new(RestorePoint)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out. in must be non-nil.
func (in *Decision) DeepCopyInto(out *Decision) { *out = *in }

// DeepCopy returns a copy of in, or nil for nil.
func (in *Decision) DeepCopy() *Decision {
	if in == nil {
		return nil
	}
	out := new(Decision)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out. in must be non-nil.
func (in *Details) DeepCopyInto(out *Details) { *out = *in }

// DeepCopy returns a copy of in, or nil for nil.
func (in *Details) DeepCopy() *Details {
	if in == nil {
		return nil
	}
	out := new(Details)
	in.DeepCopyInto(out)
	return out
}
