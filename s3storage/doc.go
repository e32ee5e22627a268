// Package s3storage is a lifecycle.Storage of S3-compatible object
// stores (AWS S3, MinIO, SeaweedFS, Ceph RGW, Google Cloud Storage's XML
// API with HMAC keys, ...), where Flink keeps checkpoints and savepoints
// under s3://, s3a:// and s3p:// URIs: the Controller lists and removes
// the retained checkpoints of replaced jobs with it
// (lifecycle.Controller.Storage), and an audit reads the sizes and times
// of the files (lifecycle.StorageEntries).
//
// It is a Go module of its own, github.com/flinkkit/flinkkit/s3storage,
// so that only its users depend on the AWS SDK for Go v2.
//
// A Storage is configured as Flink's S3 file system is: New takes
// explicit Options (endpoint, region, path-style requests, static
// credentials or the SDK's default chain), NewFromFlinkConfig the
// entries of Flink's configuration (s3.endpoint, s3.path.style.access,
// s3.access-key, ...; see FlinkOptions), and FromClient an S3 client of
// the caller's.
//
//	storage, err := s3storage.NewFromFlinkConfig(ctx, map[string]string{
//		"s3.endpoint":          "http://minio:9000",
//		"s3.path.style.access": "true",
//		"s3.access-key":        accessKey,
//		"s3.secret-key":        secretKey,
//	})
//	...
//	controller := &lifecycle.Controller{Storage: storage, ...}
//
// List reads the prefix dir + "/" with "/" as the delimiter: one
// ListObjectsV2 request per 1,000 entries. Delete lists the prefix
// path + "/" without delimiter and deletes its objects in batches of
// 1,000 (DeleteObjects) as the pages come, then the keys of the emptied
// folders and the object path itself: for n objects, ceil(n/1000)
// listings and about as many deletions, whatever the depth of the tree
// (10,000 objects: 10 listings, 11 deletions). The repository's
// docs/storage.md has the details, and how Google Cloud Storage and
// Azure fit the same interface.
package s3storage
