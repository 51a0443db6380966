/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Host shim: the subset of the kernel API that kmod/proto/ uses, so the same
 * C files build into host test programs and fuzzers. Every header under linux/ in this
 * directory includes this file.
 */
#ifndef IWP_SHIM_H
#define IWP_SHIM_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;
typedef uint16_t __be16;
typedef uint32_t __be32;
typedef uint64_t __be64;
typedef uint16_t __le16;
typedef uint32_t __le32;

#define __packed __attribute__((packed))
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#define __maybe_unused __attribute__((unused))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "host shim assumes a little-endian host"
#endif
#define cpu_to_be16(x) ((__be16)__builtin_bswap16((u16)(x)))
#define cpu_to_be32(x) ((__be32)__builtin_bswap32((u32)(x)))
#define cpu_to_be64(x) ((__be64)__builtin_bswap64((u64)(x)))
#define be16_to_cpu(x) ((u16)__builtin_bswap16((u16)(x)))
#define be32_to_cpu(x) ((u32)__builtin_bswap32((u32)(x)))
#define be64_to_cpu(x) ((u64)__builtin_bswap64((u64)(x)))
#define cpu_to_le32(x) ((__le32)(x))
#define le32_to_cpu(x) ((u32)(x))

static inline u16 get_unaligned_be16(const void *p)
{
	const u8 *b = p;

	return (u16)(b[0] << 8 | b[1]);
}

static inline u32 get_unaligned_be32(const void *p)
{
	const u8 *b = p;

	return (u32)b[0] << 24 | (u32)b[1] << 16 | (u32)b[2] << 8 | b[3];
}

static inline u64 get_unaligned_be64(const void *p)
{
	return (u64)get_unaligned_be32(p) << 32 |
	       get_unaligned_be32((const u8 *)p + 4);
}

#define BUILD_BUG_ON(cond) _Static_assert(!(cond), "BUILD_BUG_ON: " #cond)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))
#define min_t(t, a, b) ((t)(a) < (t)(b) ? (t)(a) : (t)(b))
#define max_t(t, a, b) ((t)(a) > (t)(b) ? (t)(a) : (t)(b))
#define clamp_t(t, v, lo, hi) min_t(t, max_t(t, v, lo), hi)
#define U16_MAX 0xffffU
#define U32_MAX 0xffffffffU

#define EXPORT_SYMBOL(sym)
#define EXPORT_SYMBOL_GPL(sym)

#define KERN_ERR ""
#define KERN_INFO ""
#define pr_fmt(fmt) fmt
#define pr_err(...) fprintf(stderr, __VA_ARGS__)
#define pr_info(...) fprintf(stderr, __VA_ARGS__)
#define pr_debug(...) do { } while (0)

/* Bitmaps (<linux/bitops.h>, <linux/bitmap.h>); the non-atomic forms. */
#define BITS_PER_LONG (8 * (int)sizeof(long))
#define BITS_TO_LONGS(n) (((n) + BITS_PER_LONG - 1) / BITS_PER_LONG)
#define DECLARE_BITMAP(name, bits) unsigned long name[BITS_TO_LONGS(bits)]

static inline bool test_bit(unsigned long nr, const unsigned long *map)
{
	return (map[nr / BITS_PER_LONG] >> (nr % BITS_PER_LONG)) & 1;
}

static inline void __set_bit(unsigned long nr, unsigned long *map)
{
	map[nr / BITS_PER_LONG] |= 1UL << (nr % BITS_PER_LONG);
}

static inline void __clear_bit(unsigned long nr, unsigned long *map)
{
	map[nr / BITS_PER_LONG] &= ~(1UL << (nr % BITS_PER_LONG));
}

static inline void bitmap_zero(unsigned long *map, unsigned int nbits)
{
	memset(map, 0, BITS_TO_LONGS(nbits) * sizeof(unsigned long));
}

#define GFP_KERNEL 0
static inline void *kmalloc(size_t n, int gfp)
{
	(void)gfp;
	return malloc(n ? n : 1);
}

static inline void *kzalloc(size_t n, int gfp)
{
	(void)gfp;
	return calloc(1, n ? n : 1);
}

static inline void kfree(const void *p)
{
	free((void *)p);
}

/* Raw CRC32c update (no pre/post inversion), as the kernel's crc32c(). */
u32 crc32c(u32 crc, const void *address, unsigned int length);

#endif /* IWP_SHIM_H */
