package s3storage_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/s3storage"
)

// Options from the S3 entries of Flink's configuration, as
// flink-s3-fs-hadoop reads them.
func ExampleFlinkOptions() {
	o, err := s3storage.FlinkOptions(map[string]string{
		"state.checkpoints.dir":     "s3://ckpt/flink",
		"s3.endpoint":               "minio.storage:9000",
		"s3.connection.ssl.enabled": "false",
		"s3.path.style.access":      "true",
		"s3.access-key":             "flink",
		"s3.secret-key":             "flink-secret",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(o.Endpoint, o.PathStyle, o.AccessKey)

	_, err = s3storage.FlinkOptions(map[string]string{"s3.path.style.access": "yes"})
	fmt.Println(err)
	// Output:
	// http://minio.storage:9000 true flink
	// s3storage: s3.path.style.access: "yes" is neither true nor false
}

// Paths a Storage refuses to touch: they match lifecycle.ErrStoragePath,
// and the Controller does not try them again. None sends a request.
func ExampleStorage_Delete_refused() {
	storage, err := s3storage.New(context.Background(), s3storage.Options{
		Endpoint: "http://127.0.0.1:1", PathStyle: true, AccessKey: "a", SecretKey: "s",
		Buckets: []string{"ckpt"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range []string{
		"s3://ckpt/",
		"s3://ckpt/flink/../other",
		"gs://ckpt/flink/job",
		"s3://elsewhere/flink/job",
	} {
		err := storage.Delete(context.Background(), p)
		fmt.Println(errors.Is(err, lifecycle.ErrStoragePath), err)
	}
	// Output:
	// true lifecycle: storage path refused: "s3://ckpt/" is the root of bucket "ckpt"
	// true lifecycle: storage path refused: "s3://ckpt/flink/../other" contains ".."
	// true lifecycle: storage path refused: "gs://ckpt/flink/job" is not an s3://, s3a:// or s3p:// URI
	// true lifecycle: storage path refused: "s3://elsewhere/flink/job": bucket "elsewhere" is not one of ["ckpt"]
}
