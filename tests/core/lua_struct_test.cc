// Every expected value below is what redis-server 7.0.15 returned for the same Lua expression,
// rendered by the same render() inside EVAL: strings as x'hex', numbers with %.17g so that no bit
// is lost, errors as the message a script's pcall sees there (its "user_script:<line>: " prefix
// comes from Lua's luaL_error, so a one-line chunk named "@user_script" gets the same one).
#include "core/lua_struct.h"

#include <gtest/gtest.h>

#include <string>

namespace shardis::core {
namespace {

constexpr char kRender[] = R"(
function render(...)
  local out = {}
  for i = 1, select('#', ...) do
    local v = select(i, ...)
    if type(v) == 'number' then
      out[#out + 1] = string.format('%.17g', v)
    elseif type(v) == 'string' then
      local hex = v:gsub('.', function(c) return string.format('%02x', c:byte()) end)
      out[#out + 1] = "x'" .. hex .. "'"
    else
      out[#out + 1] = tostring(v)
    end
  end
  return table.concat(out, ' ')
end
)";

class LuaStructTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lua_ = luaL_newstate();
    luaL_openlibs(lua_);
    ASSERT_EQ(OpenLuaStruct(lua_), 1);
    lua_setglobal(lua_, "struct");
    ASSERT_EQ(luaL_dostring(lua_, kRender), 0);
  }

  void TearDown() override { lua_close(lua_); }

  // Runs "return render(<exprs>)" as a one-line chunk named like Redis' scripts, so that error
  // messages carry the same "user_script:1: " prefix. Returns the rendering or "error: <message>".
  std::string Eval(const std::string& exprs) {
    const std::string chunk = "return render(" + exprs + ")";
    const bool ok = luaL_loadbuffer(lua_, chunk.data(), chunk.size(), "@user_script") == 0 &&
                    lua_pcall(lua_, 0, 1, 0) == 0;
    size_t length = 0;
    const char* text = lua_tolstring(lua_, -1, &length);
    std::string result = ok ? std::string(text, length) : "error: " + std::string(text, length);
    lua_pop(lua_, 1);
    EXPECT_EQ(lua_gettop(lua_), 0);
    return result;
  }

  lua_State* lua_ = nullptr;
};

TEST_F(LuaStructTest, OpenLeavesTheModuleTable) {
  const int top = lua_gettop(lua_);
  EXPECT_EQ(OpenLuaStruct(lua_), 1);
  ASSERT_EQ(lua_gettop(lua_), top + 1);
  ASSERT_TRUE(lua_istable(lua_, -1));
  for (const char* name : {"pack", "unpack", "size"}) {
    lua_getfield(lua_, -1, name);
    EXPECT_TRUE(lua_iscfunction(lua_, -1)) << name;
    lua_pop(lua_, 1);
  }
  lua_pop(lua_, 1);
}

TEST_F(LuaStructTest, PacksEachIntegerOptionInBothByteOrders) {
  EXPECT_EQ(Eval("struct.pack('<b', -2), struct.pack('>b', -2), struct.pack('b', 300)"),
            "x'fe' x'fe' x'2c'");
  EXPECT_EQ(Eval("struct.pack('<B', 200), struct.pack('>B', 200), struct.pack('B', -1)"),
            "x'c8' x'c8' x'ff'");
  EXPECT_EQ(Eval("struct.pack('<h', -2), struct.pack('>h', -2)"), "x'feff' x'fffe'");
  EXPECT_EQ(Eval("struct.pack('<H', 0x1234), struct.pack('>H', 0x1234), struct.pack('H', 0x12345)"),
            "x'3412' x'1234' x'4523'");
  EXPECT_EQ(Eval("struct.pack('<l', -2), struct.pack('>l', -2)"),
            "x'feffffffffffffff' x'fffffffffffffffe'");
  // 0x0102030405060708 is not a double: it arrives rounded to ...0700.
  EXPECT_EQ(Eval("struct.pack('<L', 0x0102030405060708), struct.pack('>L', 0x0102030405060708)"),
            "x'0007060504030201' x'0102030405060700'");
  EXPECT_EQ(Eval("struct.pack('<T', 258), struct.pack('>T', 258)"),
            "x'0201000000000000' x'0000000000000102'");
  EXPECT_EQ(Eval("struct.pack('<i', 0x01020304), struct.pack('>i', 0x01020304), "
                 "struct.pack('i', -1)"),
            "x'04030201' x'01020304' x'ffffffff'");
  EXPECT_EQ(Eval("struct.pack('<I', 0x01020304), struct.pack('>I', 0x01020304)"),
            "x'04030201' x'01020304'");
  EXPECT_EQ(Eval("struct.pack('>i2', 258), struct.pack('i2i2', 1, 2)"), "x'0102' x'01000200'");
}

TEST_F(LuaStructTest, PacksIntegersOfEverySize) {
  EXPECT_EQ(Eval("struct.pack('<i1', -2), struct.pack('<i2', -2), struct.pack('<i3', -2), "
                 "struct.pack('<i4', -2)"),
            "x'fe' x'feff' x'feffff' x'feffffff'");
  EXPECT_EQ(Eval("struct.pack('<i5', -2), struct.pack('<i6', -2), struct.pack('<i7', -2), "
                 "struct.pack('<i8', -2)"),
            "x'feffffffff' x'feffffffffff' x'feffffffffffff' x'feffffffffffffff'");
  EXPECT_EQ(Eval("struct.pack('>i1', -2), struct.pack('>i3', -2), struct.pack('>i5', -2), "
                 "struct.pack('>i8', -2)"),
            "x'fe' x'fffffe' x'fffffffffe' x'fffffffffffffffe'");
  EXPECT_EQ(Eval("struct.pack('<I3', 0x010203), struct.pack('>I3', 0x010203), "
                 "struct.pack('>I7', 0x01020304050607)"),
            "x'030201' x'010203' x'01020304050607'");
  // Past 8 bytes the value is not sign-extended; i0 packs nothing.
  EXPECT_EQ(Eval("struct.pack('<i12', -1), struct.pack('>i12', -1), struct.pack('<I10', 0x0102), "
                 "struct.pack('<i0', 5)"),
            "x'ffffffffffffffff00000000' x'00000000ffffffffffffffff' x'02010000000000000000' x''");
  EXPECT_EQ(Eval("struct.pack('<i32', -1)"),
            "x'ffffffffffffffff000000000000000000000000000000000000000000000000'");
}

TEST_F(LuaStructTest, PacksNumbersAsRedisConvertsThem) {
  // Truncated toward zero; strings that read as numbers are numbers.
  EXPECT_EQ(Eval("struct.pack('<i', 2.7), struct.pack('<i', -2.7), struct.pack('<i', '42')"),
            "x'02000000' x'feffffff' x'2a000000'");
  EXPECT_EQ(Eval("struct.pack('<i2', 70000), struct.pack('<i2', -70000)"), "x'7011' x'90ee'");
  EXPECT_EQ(Eval("struct.pack('<L', 2^63 + 2048), struct.pack('<l', -2^63), "
                 "struct.pack('<i8', 2^53 + 1)"),
            "x'0008000000000080' x'0000000000000080' x'0000000000002000'");
  // Out of range and NaN: what x86-64's conversions give.
  EXPECT_EQ(Eval("struct.pack('<L', 2^64), struct.pack('<L', 1e30), struct.pack('<L', 1/0), "
                 "struct.pack('<L', -1/0)"),
            "x'0000000000000000' x'0000000000000000' x'0000000000000000' x'0000000000000080'");
  EXPECT_EQ(Eval("struct.pack('<L', 0/0), struct.pack('<L', -(0/0)), struct.pack('<l', -1e30)"),
            "x'0000000000000080' x'0000000000000080' x'0000000000000080'");
}

TEST_F(LuaStructTest, PacksFloatsAndDoubles) {
  EXPECT_EQ(Eval("struct.pack('<f', 1.5), struct.pack('>f', 1.5), struct.pack('<f', -0.1), "
                 "struct.pack('>f', 1e40)"),
            "x'0000c03f' x'3fc00000' x'cdccccbd' x'7f800000'");
  EXPECT_EQ(Eval("struct.pack('<d', 1.5), struct.pack('>d', 1.5), struct.pack('<d', -0.1), "
                 "struct.pack('>d', 1/0)"),
            "x'000000000000f83f' x'3ff8000000000000' x'9a9999999999b9bf' x'7ff0000000000000'");
  EXPECT_EQ(Eval("struct.pack('<f', 0/0), struct.pack('d', '2.5'), struct.pack('f', 1)"),
            "x'0000c0ff' x'0000000000000440' x'0000803f'");
  // Rounding to float at the edges: FLT_MAX plus half an ulp is a tie that rounds to infinity.
  EXPECT_EQ(Eval("struct.pack('>f', 3.4028235677973366e+38), struct.pack('>f', 3.40282357e+38), "
                 "struct.pack('>f', -3.4028236e+38), struct.pack('>f', 1e-46)"),
            "x'7f800000' x'7f800000' x'ff800000' x'00000000'");
}

TEST_F(LuaStructTest, PacksPaddingSpacesAndEmptyFormats) {
  EXPECT_EQ(Eval("struct.pack('<bxb', 1, 2), struct.pack('xxx'), struct.pack(''), "
                 "struct.pack('x', 1, 2, 3)"),
            "x'010002' x'000000' x'' x'00'");
  EXPECT_EQ(Eval("struct.pack(' > i2 ', 1), struct.pack('>h h', 1, 2)"), "x'0001' x'00010002'");
  // A format is a C string: it ends at its first zero byte.
  EXPECT_EQ(Eval(R"(struct.pack('b\0z', 1), struct.size('b\0z'), struct.unpack('b\0z', '\1'))"),
            "x'01' 1 1 2");
}

TEST_F(LuaStructTest, PacksStrings) {
  EXPECT_EQ(Eval(R"(struct.pack('s', 'ab'), struct.pack('s', 'a\0b'), struct.pack('s', ''), )"
                 R"(struct.pack('ss', 'a', 'b'))"),
            "x'616200' x'61006200' x'00' x'61006200'");
  EXPECT_EQ(Eval("struct.pack('c', 'xyz'), struct.pack('c3', 'abcdef'), "
                 "struct.pack('c0', 'hello'), struct.pack('c0', '')"),
            "x'78' x'616263' x'68656c6c6f' x''");
  // Numbers are strings where a string is wanted.
  EXPECT_EQ(Eval("struct.pack('c0', 12), struct.pack('c2', 3.5), struct.pack('bs', 1, 5)"),
            "x'3132' x'332e' x'013500'");
  EXPECT_EQ(Eval(R"(struct.pack('>c2i2', 'ab', 1), struct.pack('>i2c0', 5, 'hello'), )"
                 R"(struct.pack('c0', 'a\0b'))"),
            "x'61620001' x'000568656c6c6f' x'610062'");
}

TEST_F(LuaStructTest, PackAlignsWithBang) {
  EXPECT_EQ(Eval("struct.pack('!4 b i', 1, 2), struct.pack('!b d', 1, 2), "
                 "struct.pack('!2 b i', 1, 2), struct.pack('!8 b h', 1, 2)"),
            "x'0100000002000000' x'01000000000000000000000000000040' x'010002000000' x'01000200'");
  EXPECT_EQ(Eval("struct.pack('!1 b i', 1, 2), struct.pack('! b i', 1, 2), "
                 "struct.pack('!16 b L', 1, 2), struct.pack('b !4 i', 1, 2)"),
            "x'0102000000' x'0100000002000000' x'01000000000000000200000000000000' "
            "x'0100000002000000'");
  // Chars and strings do not align; what follows them does.
  EXPECT_EQ(Eval("struct.pack('!4 b c3 i', 1, 'abc', 2), struct.pack('!4 b s i', 1, 'ab', 2), "
                 "struct.pack('!4 b x i', 1, 2), struct.pack('!4 b f', 1, 2)"),
            "x'0161626302000000' x'0161620002000000' x'0100000002000000' x'0100000000000040'");
  EXPECT_EQ(Eval("struct.pack('!2 s h', 'ab', 1), struct.pack('!2 s h', 'a', 1)"),
            "x'616200000100' x'61000100'");
  // '!' can change mid-record; alignment is relative to the start of the record.
  EXPECT_EQ(Eval("struct.pack('!4 b i !1 b i', 1, 2, 3, 4), "
                 "struct.pack('>!4 b i2 x i', 1, 2, 3), "
                 "struct.pack('>!4 h c2 !2 b h', 1, 'ab', 2, 3)"),
            "x'01000000020000000304000000' x'010000020000000000000003' x'0001616202000003'");
  // Sizes that are not powers of two align by Redis' mask arithmetic.
  EXPECT_EQ(Eval("struct.pack('!4 b i3', 1, 2), struct.pack('!8 bb i3', 1, 2, 3), "
                 "struct.pack('!8 b i6', 1, 2), struct.pack('!4 bbb i5', 1, 2, 3, 4)"),
            "x'010000020000' x'0102030000' x'010000000000020000000000' x'010203000400000000'");
  EXPECT_EQ(Eval("struct.pack('!16 b i12', 1, 2), struct.pack('!4 bb i5', 1, 2, 3), "
                 "struct.pack('!4 b i0 b', 1, 2, 3)"),
            "x'010000000000000000000000020000000000000000000000' x'010200000300000000' x'0103'");
  EXPECT_EQ(Eval("struct.pack('!8 b i16', 1, 2)"),
            "x'010000000000000002000000000000000000000000000000'");
  EXPECT_EQ(Eval("struct.pack('!1073741824 b i32', 1, 2)"),
            "x'0100000000000000000000000000000000000000000000000000000000000000"
            "0200000000000000000000000000000000000000000000000000000000000000'");
}

TEST_F(LuaStructTest, UnpacksEachIntegerOption) {
  EXPECT_EQ(Eval(R"(struct.unpack('<b', '\254'), struct.unpack('>b', '\254'), )"
                 R"(struct.unpack('B', '\254'))"),
            "-2 -2 254 2");
  EXPECT_EQ(Eval(R"(struct.unpack('<h', '\254\255'), struct.unpack('>h', '\255\254'), )"
                 R"(struct.unpack('<H', '\254\255'), struct.unpack('>H', '\1\2'))"),
            "-2 -2 65534 258 3");
  EXPECT_EQ(Eval(R"(struct.unpack('<l', '\254\255\255\255\255\255\255\255'), )"
                 R"(struct.unpack('>l', '\255\255\255\255\255\255\255\254'))"),
            "-2 -2 9");
  EXPECT_EQ(Eval(R"(struct.unpack('<L', '\8\7\6\5\4\3\2\1'), )"
                 R"(struct.unpack('>L', '\1\2\3\4\5\6\7\8'), )"
                 R"(struct.unpack('<L', '\255\255\255\255\255\255\255\255'))"),
            "72623859790382848 72623859790382848 1.8446744073709552e+19 9");
  EXPECT_EQ(Eval(R"(struct.unpack('<T', '\2\1\0\0\0\0\0\0'), )"
                 R"(struct.unpack('>T', '\0\0\0\0\0\0\1\2'))"),
            "258 258 9");
  EXPECT_EQ(Eval(R"(struct.unpack('<i', '\4\3\2\1'), struct.unpack('>i', '\1\2\3\4'), )"
                 R"(struct.unpack('<i', '\255\255\255\255'), )"
                 R"(struct.unpack('<I', '\255\255\255\255'))"),
            "16909060 16909060 -1 4294967295 5");
}

TEST_F(LuaStructTest, UnpacksAndSignExtendsEverySize) {
  EXPECT_EQ(Eval(R"(struct.unpack('<i1', '\128'), struct.unpack('<i2', '\0\128'), )"
                 R"(struct.unpack('<i3', '\0\0\128'), struct.unpack('<i4', '\0\0\0\128'))"),
            "-128 -32768 -8388608 -2147483648 5");
  EXPECT_EQ(Eval(R"(struct.unpack('<i5', '\0\0\0\0\128'), struct.unpack('<i6', '\0\0\0\0\0\128'), )"
                 R"(struct.unpack('<i7', '\0\0\0\0\0\0\128'), )"
                 R"(struct.unpack('<i8', '\0\0\0\0\0\0\0\128'))"),
            "-549755813888 -140737488355328 -36028797018963968 -9.2233720368547758e+18 9");
  EXPECT_EQ(Eval(R"(struct.unpack('>i1', '\127'), struct.unpack('>i3', '\255\255\254'), )"
                 R"(struct.unpack('>i5', '\128\0\0\0\1'), )"
                 R"(struct.unpack('>i7', '\127\255\255\255\255\255\255'))"),
            "127 -2 -549755813887 36028797018963968 8");
  EXPECT_EQ(Eval(R"(struct.unpack('<I1', '\128'), struct.unpack('<I3', '\0\0\128'), )"
                 R"(struct.unpack('>I5', '\128\0\0\0\1'), )"
                 R"(struct.unpack('<I8', '\0\0\0\0\0\0\0\128'))"),
            "128 8388608 549755813889 9.2233720368547758e+18 9");
  EXPECT_EQ(Eval(R"(struct.unpack('<i', struct.pack('<i', -123456)), )"
                 R"(struct.unpack('>L', struct.pack('>L', 2^53)))"),
            "-123456 9007199254740992 9");
}

TEST_F(LuaStructTest, UnpacksIntegersWiderThanEightBytesAsRedisDoes) {
  // Only the low 8 bytes count, and the sign comes from bit (size*8-1) % 64.
  EXPECT_EQ(Eval(R"(struct.unpack('<i9', '\128\0\0\0\0\0\0\0\0'), )"
                 R"(struct.unpack('<i9', '\0\0\0\0\0\0\0\0\128'), )"
                 R"(struct.unpack('<i16', '\0\0\0\0\0\0\0\128\0\0\0\0\0\0\0\0'))"),
            "-128 0 -9.2233720368547758e+18 17");
  EXPECT_EQ(Eval(R"(struct.unpack('<i12', '\1\0\0\0\0\0\0\0\0\0\0\128'), )"
                 R"(struct.unpack('<i12', '\0\0\0\128\0\0\0\0\0\0\0\0'), )"
                 R"(struct.unpack('>I12', '\9\9\9\9\0\0\0\0\0\0\1\2'))"),
            "1 -2147483648 258 13");
  EXPECT_EQ(Eval(R"(struct.unpack('<i0', ''), struct.unpack('<I0', 'ab'), )"
                 R"(struct.unpack('<i32', string.rep('\255', 32)))"),
            "0 0 -1 33");
  EXPECT_EQ(Eval(R"(struct.unpack('<i10', '\255\255\255\255\255\255\255\127\255\255'), )"
                 R"(struct.unpack('<i15', '\255\255\0\0\0\0\0\0\0\0\0\0\0\0\0'))"),
            "-1 65535 16");
}

TEST_F(LuaStructTest, UnpacksFloatsAndDoubles) {
  EXPECT_EQ(Eval(R"(struct.unpack('<f', '\0\0\192\63'), struct.unpack('>f', '\63\192\0\0'), )"
                 R"(struct.unpack('<f', '\205\204\204\189'))"),
            "1.5 1.5 -0.10000000149011612 5");
  EXPECT_EQ(Eval(R"(struct.unpack('<d', '\0\0\0\0\0\0\248\63'), )"
                 R"(struct.unpack('>d', '\63\248\0\0\0\0\0\0'), )"
                 R"(struct.unpack('>d', '\127\240\0\0\0\0\0\0'))"),
            "1.5 1.5 inf 9");
  EXPECT_EQ(Eval(R"(struct.unpack('>f', '\255\128\0\0'), )"
                 R"(struct.unpack('>d', '\128\0\0\0\0\0\0\0'))"),
            "-inf -0 9");
}

TEST_F(LuaStructTest, UnpacksStrings) {
  EXPECT_EQ(Eval(R"(struct.unpack('s', 'ab\0cd'), struct.unpack('ss', 'ab\0cd\0'), )"
                 R"(struct.unpack('s', '\0'), struct.unpack('s', 'ab\0cd\0', 4))"),
            "x'6162' x'6162' x'' x'6364' 7");
  EXPECT_EQ(Eval("struct.unpack('c', 'xyz'), struct.unpack('c2', 'xyz'), "
                 "struct.unpack('c3', 'xyz')"),
            "x'78' x'7879' x'78797a' 4");
  EXPECT_EQ(Eval(R"(struct.unpack('c3', 'a\0b'))"), "x'610062' 4");
}

TEST_F(LuaStructTest, UnpacksC0WithThePreviousNumberAsLength) {
  EXPECT_EQ(Eval(R"(struct.unpack('bc0', '\3abcd'), struct.unpack('>i2 c0 b', '\0\2hi\7'), )"
                 R"(struct.unpack('c1c0', '3abcd'), struct.unpack('bc0', '\0abcd'))"),
            "x'616263' x'6869' x'616263' x'' 2");
  // The length replaces the number among the results; a string that reads as a number counts.
  EXPECT_EQ(Eval("struct.unpack('c2c0', '03abcdefghij')"), "x'616263' 6");
  EXPECT_EQ(Eval("struct.unpack('c4c0', '0x02abcd')"), "x'6162' 7");
  EXPECT_EQ(Eval("struct.unpack('c3c0', '2.9abc')"), "x'6162' 6");
  EXPECT_EQ(Eval(R"(struct.unpack('bc0', '\2\2abcd', 2))"), "x'6162' 5");
  // +inf converts to a zero length; 0 too.
  EXPECT_EQ(Eval(R"(struct.unpack('dc0', '\0\0\0\0\0\0\240\127abc'))"), "x'' 9");
  EXPECT_EQ(Eval(R"(struct.unpack('dc0', '\0\0\0\0\0\0\0\0ab'))"), "x'' 9");
}

TEST_F(LuaStructTest, UnpackStartsAtAPositionAndReturnsTheNext) {
  EXPECT_EQ(Eval("struct.unpack('b', 'abc', 2), struct.unpack('b', 'abc', 3), "
                 "struct.unpack('bb', 'abc'), struct.unpack('', 'abc'), "
                 "struct.unpack('', 'abc', 4)"),
            "98 99 97 1 4");
  // An empty format returns any position, past the end or negative; fractions truncate.
  EXPECT_EQ(Eval("struct.unpack('', 'abc', 10), struct.unpack('', 'abc', -5), "
                 "struct.unpack('>', 'abc', 4), struct.unpack('b', 'abc', 2.9), "
                 "struct.unpack('b', 'abc', '2')"),
            "10 -5 4 98 98 3");
  EXPECT_EQ(Eval("struct.unpack('', 'abc', 2^62)"), "4.6116860184273879e+18");
  EXPECT_EQ(Eval(R"(struct.unpack('<bxb', '\1\9\2'), struct.unpack('xxx', 'abc'), )"
                 R"(struct.unpack(' < i2 ', '\1\0'))"),
            "1 4 1 3");
  // Only the last call's results are all kept: "2" is the first unpack's first value.
  EXPECT_EQ(Eval(R"(struct.unpack('>i2 i2', '\0\1\0\2\0\3', 3), )"
                 R"(struct.unpack('i', '\1\0\0\0\9', 1))"),
            "2 1 5");
}

TEST_F(LuaStructTest, UnpackAlignsRelativeToTheStartOfTheData) {
  EXPECT_EQ(Eval(R"(struct.unpack('!4 b i', '\1\0\0\0\2\0\0\0'), )"
                 R"(struct.unpack('!4 i', '\0\0\0\0\0\0\0\0\5\0\0\0', 2), )"
                 R"(struct.unpack('!4 i', '\0\0\0\0\5\0\0\0', 4))"),
            "1 0 5 9");
  EXPECT_EQ(Eval(R"(struct.unpack('!4 i', '\0\0\0\0\0\0\0\0\5\0\0\0', 5))"), "0 9");
  EXPECT_EQ(Eval(R"(struct.unpack('!4 b c3 i', '\1abc\2\0\0\0'), )"
                 R"(struct.unpack('!4 b s i', '\1ab\0\2\0\0\0'), )"
                 R"(struct.unpack('!8 b d', '\1\0\0\0\0\0\0\0\0\0\0\0\0\0\248\63'))"),
            "1 1 1 1.5 17");
  EXPECT_EQ(Eval(R"(struct.unpack('!4 bb i3', '\1\2\0\0\3\0\0\0'), )"
                 R"(struct.unpack('!4 bbb i5', '\1\2\3\0\4\0\0\0\0'))"),
            "1 1 2 3 4 10");
  EXPECT_EQ(Eval(R"(struct.unpack('!2 s h', 'a\0\1\0'))"), "x'61' 1 5");
  EXPECT_EQ(Eval(R"(struct.unpack('!2 s h', 'ab\0\0\1\0'))"), "x'6162' 1 7");
  EXPECT_EQ(Eval(R"(struct.unpack('!4 s i', '\0\0\0\0\2\0\0\0'))"), "x'' 2 9");
  EXPECT_EQ(Eval(R"(struct.unpack('!4 b f', '\1\0\0\0\0\0\192\63'))"), "1 1.5 9");
  EXPECT_EQ(Eval(R"(struct.unpack('!8 b i16', )"
                 R"('\1\0\0\0\0\0\0\0\2\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0'))"),
            "1 2 25");
}

TEST_F(LuaStructTest, SizeOfFormats) {
  EXPECT_EQ(Eval("struct.size(''), struct.size('i'), struct.size('bhlTifdx'), struct.size('c10'), "
                 "struct.size('c'), struct.size('!4 b i'), struct.size('!b d'), "
                 "struct.size('!8 b i3')"),
            "0 4 36 10 1 8 16 6");
  EXPECT_EQ(Eval("struct.size('i0'), struct.size('  >< '), struct.size('i32I32'), "
                 "struct.size('c2147483647c2147483647')"),
            "0 0 64 4294967294");
  EXPECT_EQ(Eval("struct.size('!4 bb i5'), struct.size('!4 bbb i5'), struct.size('b!2h'), "
                 "struct.size('!4 b c3 i')"),
            "9 9 4 8");
  EXPECT_EQ(Eval("struct.size('c'), struct.size('c1c'), struct.size('! b i'), "
                 "struct.size('!2 b L'), struct.size('!16 b L'), struct.size('d !2 b d')"),
            "1 2 8 10 16 18");
  // size() lets unknown letters and digits through as zero bytes (pack would refuse them).
  EXPECT_EQ(Eval("struct.size('x4zn'), struct.size('n')"), "1 0");
}

TEST_F(LuaStructTest, FormatErrors) {
  EXPECT_EQ(Eval("struct.pack('i33', 1)"),
            "error: user_script:1: integral size 33 is larger than limit of 32");
  EXPECT_EQ(Eval("struct.unpack('I33', '')"),
            "error: user_script:1: integral size 33 is larger than limit of 32");
  EXPECT_EQ(Eval("struct.size('i100')"),
            "error: user_script:1: integral size 100 is larger than limit of 32");
  EXPECT_EQ(Eval("struct.pack('i2147483648', 1)"), "error: user_script:1: integral size overflow");
  EXPECT_EQ(Eval("struct.size('c99999999999')"), "error: user_script:1: integral size overflow");
  EXPECT_EQ(Eval("struct.size('!2147483648')"), "error: user_script:1: integral size overflow");
  EXPECT_EQ(Eval("struct.pack('!3i', 1)"), "error: user_script:1: alignment 3 is not a power of 2");
  EXPECT_EQ(Eval("struct.pack('!0i', 1)"), "error: user_script:1: alignment 0 is not a power of 2");
  EXPECT_EQ(Eval("struct.size('!6')"), "error: user_script:1: alignment 6 is not a power of 2");
  EXPECT_EQ(Eval("struct.unpack('!12 i', '')"),
            "error: user_script:1: alignment 12 is not a power of 2");
  EXPECT_EQ(Eval("struct.pack('iz', 1)"),
            "error: user_script:1: bad argument #1 to 'pack' (invalid format option 'z')");
  // 'n' (a lua_Number in later lstruct versions) is not an option in Redis' copy.
  EXPECT_EQ(Eval("struct.pack('n', 1)"),
            "error: user_script:1: bad argument #1 to 'pack' (invalid format option 'n')");
  EXPECT_EQ(Eval("struct.unpack('z', '')"),
            "error: user_script:1: bad argument #1 to 'unpack' (invalid format option 'z')");
  EXPECT_EQ(Eval("struct.size('?')"),
            "error: user_script:1: bad argument #1 to 'size' (invalid format option '?')");
  EXPECT_EQ(Eval(R"(struct.pack('i\255', 1))"),
            "error: user_script:1: bad argument #1 to 'pack' (invalid format option '\xff')");
  // A count only follows the options that take one: "i 2" is i, a space, and an option '2'.
  EXPECT_EQ(Eval("struct.pack(' > i 2 ', 1)"),
            "error: user_script:1: bad argument #1 to 'pack' (invalid format option '2')");
  EXPECT_EQ(Eval("struct.size('s')"),
            "error: user_script:1: bad argument #1 to 'size' (option 's' has no fixed size)");
  EXPECT_EQ(Eval("struct.size('bc0')"),
            "error: user_script:1: bad argument #1 to 'size' (option 'c0' has no fixed size)");
}

TEST_F(LuaStructTest, PackArgumentErrors) {
  // The short string is argument 2; Redis names the one after it.
  EXPECT_EQ(Eval("struct.pack('c5', 'ab')"),
            "error: user_script:1: bad argument #3 to 'pack' (string too short)");
  EXPECT_EQ(Eval("struct.pack('c', '')"),
            "error: user_script:1: bad argument #3 to 'pack' (string too short)");
  EXPECT_EQ(Eval("struct.pack('i')"),
            "error: user_script:1: bad argument #2 to 'pack' (number expected, got nil)");
  EXPECT_EQ(Eval("struct.pack('ii', 1)"),
            "error: user_script:1: bad argument #3 to 'pack' (number expected, got nil)");
  EXPECT_EQ(Eval("struct.pack('d', 'x')"),
            "error: user_script:1: bad argument #2 to 'pack' (number expected, got string)");
  EXPECT_EQ(Eval("struct.pack('s', {})"),
            "error: user_script:1: bad argument #2 to 'pack' (string expected, got table)");
  EXPECT_EQ(Eval("struct.pack('c0')"),
            "error: user_script:1: bad argument #2 to 'pack' (string expected, got nil)");
  EXPECT_EQ(Eval("struct.pack()"),
            "error: user_script:1: bad argument #1 to 'pack' (string expected, got no value)");
  EXPECT_EQ(Eval("struct.pack(nil)"),
            "error: user_script:1: bad argument #1 to 'pack' (string expected, got nil)");
}

TEST_F(LuaStructTest, UnpackArgumentErrors) {
  EXPECT_EQ(Eval("struct.unpack('b')"),
            "error: user_script:1: bad argument #2 to 'unpack' (string expected, got no value)");
  EXPECT_EQ(Eval("struct.unpack()"),
            "error: user_script:1: bad argument #1 to 'unpack' (string expected, got no value)");
  EXPECT_EQ(Eval("struct.unpack('b', 'abc', 0)"),
            "error: user_script:1: bad argument #3 to 'unpack' (offset must be 1 or greater)");
  EXPECT_EQ(Eval("struct.unpack('b', 'abc', 'x')"),
            "error: user_script:1: bad argument #3 to 'unpack' (number expected, got string)");
}

TEST_F(LuaStructTest, UnpackDataErrors) {
  const std::string too_short =
      "error: user_script:1: bad argument #2 to 'unpack' (data string too short)";
  EXPECT_EQ(Eval("struct.unpack('b', '')"), too_short);
  EXPECT_EQ(Eval("struct.unpack('i', 'abc')"), too_short);
  EXPECT_EQ(Eval("struct.unpack('f', 'abc')"), too_short);
  EXPECT_EQ(Eval("struct.unpack('i', 12)"), too_short);  // "12" is two bytes
  EXPECT_EQ(Eval("struct.unpack('bb', 'a')"), too_short);
  EXPECT_EQ(Eval("struct.unpack('x', '')"), too_short);
  EXPECT_EQ(Eval("struct.unpack('>', '', 5)"), too_short);  // checked before any option
  EXPECT_EQ(Eval("struct.unpack('b', 'abc', 4)"), too_short);
  EXPECT_EQ(Eval("struct.unpack('b', 'abc', -1)"), too_short);
  EXPECT_EQ(Eval("struct.unpack('b', 'abc', 2^53)"), too_short);
  EXPECT_EQ(Eval(R"(struct.unpack('!4 s i', '\0\0\0\0\0', 2))"), too_short);
  // c0 lengths: too long, negative, NaN and -inf (both a huge size_t).
  EXPECT_EQ(Eval(R"(struct.unpack('bc0', '\5abc'))"), too_short);
  EXPECT_EQ(Eval(R"(struct.unpack('bc0', '\255abc'))"), too_short);
  EXPECT_EQ(Eval("struct.unpack('c2c0', '-1abc')"), too_short);
  EXPECT_EQ(Eval("struct.unpack('c3c0', 'nanabc')"), too_short);
  EXPECT_EQ(Eval(R"(struct.unpack('dc0', '\0\0\0\0\0\0\248\255abc'))"), too_short);
  EXPECT_EQ(Eval(R"(struct.unpack('dc0', '\0\0\0\0\0\0\240\255abc'))"), too_short);
  EXPECT_EQ(Eval(R"(struct.unpack('Lc0', '\0\0\0\0\0\0\240\67abc'))"), too_short);

  const std::string needs_size = "error: user_script:1: format 'c0' needs a previous size";
  EXPECT_EQ(Eval("struct.unpack('c0', 'abc')"), needs_size);
  EXPECT_EQ(Eval(R"(struct.unpack('sc0', 'a\0bc'))"), needs_size);
  EXPECT_EQ(Eval("struct.unpack('c2c0', '1eabc')"), needs_size);
  EXPECT_EQ(Eval(R"(struct.unpack('bc0c0', '\2abcd'))"), needs_size);

  EXPECT_EQ(Eval("struct.unpack('s', 'abc')"), "error: user_script:1: unfinished string in data");
  EXPECT_EQ(Eval("struct.unpack('bs', 'a')"), "error: user_script:1: unfinished string in data");
  EXPECT_EQ(Eval("struct.unpack(string.rep('b', 8000), string.rep('a', 8000))"),
            "error: user_script:1: stack overflow (too many results)");
}

}  // namespace
}  // namespace shardis::core
