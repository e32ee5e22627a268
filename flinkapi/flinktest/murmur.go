package flinktest

import (
	"encoding/binary"
	"encoding/hex"
	"math/bits"
)

// vertexIDOfUID returns the job vertex id Flink gives the chain whose
// first operator has the uid: the x64 128-bit MurmurHash3 (seed 0) of the
// uid's UTF-8 bytes, its two halves little-endian, in hexadecimal.
func vertexIDOfUID(uid string) string {
	h := murmur3x64(uid)
	return hex.EncodeToString(h[:])
}

// murmur3x64 is MurmurHash3's x64 128-bit variant with seed 0.
func murmur3x64(s string) [16]byte {
	data := []byte(s)
	var h1, h2 uint64
	n := len(data)
	i := 0
	for ; i+16 <= n; i += 16 {
		k1 := binary.LittleEndian.Uint64(data[i:])
		k2 := binary.LittleEndian.Uint64(data[i+8:])
		h1 ^= mixK1(k1)
		h1 = bits.RotateLeft64(h1, 27) + h2
		h1 = h1*5 + 0x52dce729
		h2 ^= mixK2(k2)
		h2 = bits.RotateLeft64(h2, 31) + h1
		h2 = h2*5 + 0x38495ab5
	}
	var k1, k2 uint64
	tail := data[i:]
	for j := len(tail) - 1; j >= 0; j-- {
		if j >= 8 {
			k2 |= uint64(tail[j]) << (8 * uint(j-8))
		} else {
			k1 |= uint64(tail[j]) << (8 * uint(j))
		}
	}
	if len(tail) > 8 {
		h2 ^= mixK2(k2)
	}
	if len(tail) > 0 {
		h1 ^= mixK1(k1)
	}
	h1 ^= uint64(n)
	h2 ^= uint64(n)
	h1 += h2
	h2 += h1
	h1, h2 = fmix64(h1), fmix64(h2)
	h1 += h2
	h2 += h1
	var out [16]byte
	binary.LittleEndian.PutUint64(out[:8], h1)
	binary.LittleEndian.PutUint64(out[8:], h2)
	return out
}

func mixK1(k uint64) uint64 {
	k *= 0x87c37b91114253d5
	k = bits.RotateLeft64(k, 31)
	return k * 0x4cf5ad432745937f
}

func mixK2(k uint64) uint64 {
	k *= 0x4cf5ad432745937f
	k = bits.RotateLeft64(k, 33)
	return k * 0x87c37b91114253d5
}

func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}
