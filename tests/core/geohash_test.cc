// Known values from redis-server 7.0.15 (GEOADD scores, GEOPOS, GEOHASH, GEODIST replies).
#include "core/geohash.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "core/number.h"

namespace shardis::core::geohash {
namespace {

std::string Human(double d) { return FormatLongDouble(d); }
std::string Dist(double d) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.4f", d);
  return buf;
}

TEST(GeohashTest, ScoresOfGeoadd) {
  EXPECT_EQ(LonLatToScore(13.361389, 38.115556), 3479099956230698ULL);
  EXPECT_EQ(LonLatToScore(15.087269, 37.502669), 3479447370796909ULL);
  EXPECT_EQ(LonLatToScore(2.3522, 48.8566), 3663832779122514ULL);
  EXPECT_EQ(LonLatToScore(-0.1276, 51.5072), 2163557714838307ULL);
  EXPECT_EQ(LonLatToScore(-73.9857, 40.7484), 1791875672646935ULL);
  EXPECT_EQ(LonLatToScore(0, 0), 3377699720527872ULL);
  EXPECT_EQ(LonLatToScore(179.9, 85), 4503598808108472ULL);
  EXPECT_EQ(LonLatToScore(-179.9, -85.05), 545384275ULL);
}

TEST(GeohashTest, EncodeRejectsOutOfRange) {
  Bits h;
  EXPECT_FALSE(EncodeWGS84(200, 10, kStepMax, &h));
  EXPECT_FALSE(EncodeWGS84(10, 86, kStepMax, &h));
  EXPECT_TRUE(EncodeWGS84(180, kLatMax, kStepMax, &h));
}

TEST(GeohashTest, DecodeLikeGeopos) {
  double xy[2];
  ASSERT_TRUE(ScoreToLonLat(3479099956230698.0, xy));
  EXPECT_EQ(Human(xy[0]), "13.36138933897018433");
  EXPECT_EQ(Human(xy[1]), "38.11555639549629859");
  ASSERT_TRUE(ScoreToLonLat(1791875672646935.0, xy));
  EXPECT_EQ(Human(xy[0]), "-73.98570209741592407");
  EXPECT_EQ(Human(xy[1]), "40.74839914563441567");
  ASSERT_TRUE(ScoreToLonLat(4503598808108472.0, xy));
  EXPECT_EQ(Human(xy[0]), "179.89999920129776001");
  EXPECT_EQ(Human(xy[1]), "84.99999965213439168");
}

TEST(GeohashTest, ScoresThatAreNotGeohashes) {
  // ZADD z 1.5 a -3 b 1e300 c: GEOPOS replies of redis-server.
  double xy[2];
  ASSERT_TRUE(ScoreToLonLat(1.5, xy));
  EXPECT_EQ(Human(xy[0]), "-179.99999731779098511");
  EXPECT_EQ(Human(xy[1]), "-85.05112497791824921");
  ASSERT_TRUE(ScoreToLonLat(-3, xy));
  EXPECT_EQ(Human(xy[0]), "180");
  EXPECT_EQ(Human(xy[1]), "85.0511287799999991");
  ASSERT_TRUE(ScoreToLonLat(1e300, xy));
  EXPECT_EQ(Human(xy[0]), "-179.99999731779098511");
  EXPECT_EQ(Human(xy[1]), "-85.05112751263942528");
  ASSERT_TRUE(ScoreToLonLat(9.3e18, xy));
  EXPECT_EQ(Human(xy[0]), "180");
}

TEST(GeohashTest, HashStrings) {
  const struct {
    double score;
    const char* hash;
  } cases[] = {{3479099956230698.0, "sqc8b49rny0"}, {3479447370796909.0, "sqdtr74hyu0"},
               {3663832779122514.0, "u09tvw0f640"}, {2163557714838307.0, "gcpvj0e54w0"},
               {1791875672646935.0, "dr5ru6j28h0"}, {3377699720527872.0, "s0000000000"},
               {4503598808108472.0, "zzpgt9z0vu0"}, {545384275.0, "00bh4m0gf40"},
               {1.5, "00bh0hbj210"},                {-3, "bp05b5048p0"}};
  for (const auto& c : cases) {
    double xy[2];
    ASSERT_TRUE(ScoreToLonLat(c.score, xy));
    EXPECT_EQ(HashString(xy[0], xy[1]), c.hash) << c.score;
  }
}

TEST(GeohashTest, Distances) {
  double a[2], b[2];
  ScoreToLonLat(3479099956230698.0, a);
  ScoreToLonLat(3479447370796909.0, b);
  EXPECT_EQ(Dist(Distance(a[0], a[1], b[0], b[1])), "166274.1516");
  ScoreToLonLat(3663832779122514.0, a);
  ScoreToLonLat(2163557714838307.0, b);
  EXPECT_EQ(Dist(Distance(a[0], a[1], b[0], b[1]) / 1000), "343.6268");
  ScoreToLonLat(1791875672646935.0, a);
  EXPECT_EQ(Dist(Distance(a[0], a[1], b[0], b[1]) / 1609.34), "3459.8037");
}

TEST(GeohashTest, StepsByRadius) {
  EXPECT_EQ(EstimateStepsByRadius(0, 0), 26);
  EXPECT_EQ(EstimateStepsByRadius(200000, 37), 6);
  EXPECT_EQ(EstimateStepsByRadius(200000, 70), 5);
  EXPECT_EQ(EstimateStepsByRadius(200000, 85), 4);
  EXPECT_EQ(EstimateStepsByRadius(1e9, 0), 1);
  EXPECT_EQ(EstimateStepsByRadius(0.01, 0), 26);
}

TEST(GeohashTest, NeighborsWrapAround) {
  Bits h;
  ASSERT_TRUE(EncodeWGS84(0.1, 0.1, 1, &h));  // the north-east quarter: lon bit 1, lat bit 1
  EXPECT_EQ(h.bits, 3u);
  const Neighbors n = GetNeighbors(h);
  EXPECT_EQ(n.west.bits, 1u);
  EXPECT_EQ(n.south.bits, 2u);
  EXPECT_EQ(n.east.bits, 1u);  // wraps around
  EXPECT_EQ(n.south_west.bits, 0u);
}

TEST(GeohashTest, SearchAroundCatania) {
  // GEOSEARCH g FROMLONLAT 15 37 BYRADIUS 200 km: Palermo at 190.4424 km, Catania at 56.4413 km.
  Shape shape;
  shape.xy[0] = 15;
  shape.xy[1] = 37;
  shape.radius = 200;
  shape.conversion = 1000;
  const SearchArea area = AreasByShape(&shape);
  EXPECT_GE(area.hash.step, 1);
  double xy[2], dist;
  ASSERT_TRUE(WithinShape(shape, 3479099956230698.0, xy, &dist));
  EXPECT_EQ(Dist(dist / 1000), "190.4424");
  ASSERT_TRUE(WithinShape(shape, 3479447370796909.0, xy, &dist));
  EXPECT_EQ(Dist(dist / 1000), "56.4413");
  EXPECT_FALSE(WithinShape(shape, 3663832779122514.0, xy, &dist));  // Paris
  shape.type = Shape::kBox;
  shape.width = 400;
  shape.height = 200;
  ASSERT_TRUE(WithinShape(shape, 3479447370796909.0, xy, &dist));
  EXPECT_FALSE(WithinShape(shape, 3479099956230698.0, xy, &dist));  // 124 km north
}

}  // namespace
}  // namespace shardis::core::geohash
