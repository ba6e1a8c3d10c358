#include "core/access_clock.h"

#include <gtest/gtest.h>

namespace shardis::core {
namespace {

constexpr int64_t kSecond = 1000, kMinute = 60 * kSecond;
// 2^24 seconds: the LRU clock's period.
constexpr int64_t kLruPeriodMs = int64_t(kLruClockMax + 1) * kSecond;

TEST(AccessClockTest, LruIdleTimeInWholeSeconds) {
  const int64_t t0 = 1'700'000'000'123;
  const uint32_t c = LruClock(t0);
  EXPECT_EQ(LruIdleMs(c, t0), 0);
  EXPECT_EQ(LruIdleMs(c, t0 + 999 - 123), 0);  // the same second
  EXPECT_EQ(LruIdleMs(c, t0 + 1100), 1000);
  EXPECT_EQ(LruIdleMs(c, t0 + 3600 * kSecond), 3600 * kSecond);
}

TEST(AccessClockTest, LruIdleTimeAcrossTheWrap) {
  // A key touched 10 s before the clock wraps, read 5 s after it.
  const int64_t wrap = 100 * kLruPeriodMs;
  const uint32_t c = LruClock(wrap - 10 * kSecond);
  EXPECT_EQ(c, kLruClockMax - 9);
  EXPECT_EQ(LruClock(wrap + 5 * kSecond), 5u);
  // As Redis' estimateObjectIdleTime: now + (max - clock), one tick short across the wrap.
  EXPECT_EQ(LruIdleMs(c, wrap + 5 * kSecond), 14 * kSecond);
}

TEST(AccessClockTest, LruClockIdleForRestoresAnIdleTime) {
  const int64_t now = 1'700'000'000'000;
  EXPECT_EQ(LruIdleMs(LruClockIdleFor(0, now), now), 0);
  EXPECT_EQ(LruIdleMs(LruClockIdleFor(1000, now), now), 1000 * kSecond);
  // Just after the wrap, an idle time reaching back before it.
  const int64_t wrap = 100 * kLruPeriodMs + 3 * kSecond;
  EXPECT_EQ(LruIdleMs(LruClockIdleFor(100, wrap), wrap), 100 * kSecond);
  // Huge idle times do not overflow and stay within the clock.
  EXPECT_LE(LruClockIdleFor(INT64_MAX / 2, now), kLruClockMax);
}

TEST(AccessClockTest, LfuDecaysOnePerPeriod) {
  const int64_t t0 = 1'700'000'000'000;
  const uint32_t c = LfuClock(20, t0);
  EXPECT_EQ(c & 0xFF, 20u);
  EXPECT_EQ(LfuDecayedCounter(c, t0, 1), 20u);
  EXPECT_EQ(LfuDecayedCounter(c, t0 + 3 * kMinute, 1), 17u);
  EXPECT_EQ(LfuDecayedCounter(c, t0 + 3 * kMinute, 2), 19u);
  EXPECT_EQ(LfuDecayedCounter(c, t0 + 3 * kMinute, 0), 20u);  // decay off
  EXPECT_EQ(LfuDecayedCounter(c, t0 + 20 * kMinute, 1), 0u);
  EXPECT_EQ(LfuDecayedCounter(c, t0 + 500 * kMinute, 1), 0u);
}

TEST(AccessClockTest, LfuMinutesWrap) {
  // Last decrement 2 minutes before the 16-bit minute clock wraps, read 3 minutes after.
  const int64_t wrap = int64_t(65536) * 7 * kMinute;
  const uint32_t c = LfuClock(10, wrap - 2 * kMinute);
  EXPECT_EQ(c >> 8, 65534u);
  // As Redis' LFUTimeElapsed: 65535 - last + now = 4.
  EXPECT_EQ(LfuDecayedCounter(c, wrap + 3 * kMinute, 1), 6u);
}

TEST(AccessClockTest, LfuIncrementIsLogarithmic) {
  // Up to kLfuInitVal, every access counts.
  EXPECT_EQ(LfuIncrement(0, 10, 0.999), 1u);
  EXPECT_EQ(LfuIncrement(kLfuInitVal, 10, 0.999), kLfuInitVal + 1);
  // Above it, with probability 1 / ((counter - 5) * factor + 1).
  EXPECT_EQ(LfuIncrement(15, 10, 1.0 / 101 - 1e-9), 16u);
  EXPECT_EQ(LfuIncrement(15, 10, 1.0 / 101 + 1e-9), 15u);
  EXPECT_EQ(LfuIncrement(15, 0, 0.999), 16u);  // factor 0: linear
  EXPECT_EQ(LfuIncrement(255, 0, 0.0), 255u);  // saturates
}

TEST(AccessClockTest, LfuTouchDecaysThenIncrements) {
  const int64_t t0 = 1'700'000'000'000;
  const uint32_t c = LfuTouch(LfuClock(8, t0), t0 + 2 * kMinute, 10, 1, 0.0);
  EXPECT_EQ(c & 0xFF, 7u);  // 8 - 2 + 1
  EXPECT_EQ(c >> 8, LfuMinutes(t0 + 2 * kMinute));
}

}  // namespace
}  // namespace shardis::core
