// SHARDIS_ASAN and SHARDIS_TSAN: 1 when the translation unit is built with AddressSanitizer or
// ThreadSanitizer, 0 otherwise, for g++ and clang alike. g++ defines __SANITIZE_ADDRESS__ and
// __SANITIZE_THREAD__; clang before 17 defines neither and answers __has_feature instead, so a
// bare `#if defined(__SANITIZE_ADDRESS__)` silently drops the sanitizer-only code under clang.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define SHARDIS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SHARDIS_ASAN 1
#endif
#endif
#ifndef SHARDIS_ASAN
#define SHARDIS_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define SHARDIS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHARDIS_TSAN 1
#endif
#endif
#ifndef SHARDIS_TSAN
#define SHARDIS_TSAN 0
#endif
