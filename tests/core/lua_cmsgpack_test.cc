// cmsgpack against Redis: every expected value below is what redis-server 7.0.15 returned for the
// same Lua, run as EVAL "<chunk>" 0 (byte strings read raw and written here as hex). Chunks run as
// "@user_script", the name Redis gives them, so error messages carry the same "user_script:1: ".
#include "core/lua_cmsgpack.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace shardis::core {
namespace {

// Lua helpers for the chunks: unhex builds input bytes; show renders values (several results
// space-separated, numbers %.17g, strings %q, tables with sorted keys) so one string compares them.
constexpr char kHelpers[] = R"lua(
function unhex(h) return (h:gsub('..', function(c) return string.char(tonumber(c, 16)) end)) end
function show(...)
  local function s(v)
    local t = type(v)
    if t == 'number' then return string.format('%.17g', v)
    elseif t == 'string' then return string.format('%q', v)
    elseif t == 'table' then
      local keys = {}
      for k in pairs(v) do keys[#keys + 1] = k end
      table.sort(keys, function(a, b)
        if type(a) ~= type(b) then return type(a) < type(b) end
        if type(a) == 'boolean' then return (not a) and b end
        return a < b end)
      local parts = {}
      for _, k in ipairs(keys) do parts[#parts + 1] = '[' .. s(k) .. ']=' .. s(v[k]) end
      return '{' .. table.concat(parts, ',') .. '}'
    else return tostring(v) end
  end
  local out = {}
  for i = 1, select('#', ...) do out[#out + 1] = s((select(i, ...))) end
  return table.concat(out, ' ')
end
)lua";

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string Repeat(std::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

class LuaCmsgpackTest : public ::testing::Test {
 protected:
  LuaCmsgpackTest() : L_(luaL_newstate()) { Init(); }
  explicit LuaCmsgpackTest(lua_State* L) : L_(L) { Init(); }
  ~LuaCmsgpackTest() override { lua_close(L_); }

  // Runs `code` and returns its first result as a string, or "error: <message>".
  std::string Run(const std::string& code) {
    const int top = lua_gettop(L_);
    std::string out;
    if (luaL_loadbuffer(L_, code.data(), code.size(), "@user_script") != 0 ||
        lua_pcall(L_, 0, 1, 0) != 0) {
      out = std::string("error: ") + lua_tostring(L_, -1);
    } else {
      size_t len = 0;
      const char* s = lua_tolstring(L_, -1, &len);
      out = s != nullptr ? std::string(s, len) : "(not a string)";
    }
    lua_settop(L_, top);
    return out;
  }

  // cmsgpack.pack(<args>) as hex.
  std::string PackHex(const std::string& args) {
    const std::string packed = Run("return cmsgpack.pack(" + args + ")");
    if (packed.starts_with("error: ")) return packed;
    return Hex(packed);
  }

  // show(<exprs>): what the expressions evaluate to.
  std::string Show(const std::string& exprs) { return Run("return show(" + exprs + ")"); }

  lua_State* L_;

 private:
  void Init() {
    luaL_openlibs(L_);
    OpenLuaCmsgpack(L_);
    lua_setglobal(L_, "cmsgpack");
    EXPECT_EQ(Run(std::string(kHelpers) + "return ''"), "");
  }
};

struct Case {
  const char* lua;
  const char* expected;
};

TEST_F(LuaCmsgpackTest, ModuleFields) {
  EXPECT_EQ(Show("cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION"),
            R"("cmsgpack" "lua-cmsgpack 0.4.0" "Copyright (C) 2012, Salvatore Sanfilippo" )"
            R"("MessagePack C implementation for Lua")");
  EXPECT_EQ(Show("type(cmsgpack.pack), type(cmsgpack.unpack), type(cmsgpack.unpack_one), "
                 "type(cmsgpack.unpack_limit)"),
            R"("function" "function" "function" "function")");
}

TEST_F(LuaCmsgpackTest, IntegersTakeTheSmallestForm) {
  const Case cases[] = {
      {"0", "00"},
      {"1", "01"},
      {"127", "7f"},
      {"128", "cc80"},
      {"255", "ccff"},
      {"256", "cd0100"},
      {"65535", "cdffff"},
      {"65536", "ce00010000"},
      {"2^31", "ce80000000"},
      {"4294967295", "ceffffffff"},
      {"4294967296", "cf0000000100000000"},
      {"2^53", "cf0020000000000000"},
      {"2^53 + 1", "cf0020000000000000"},  // the same double
      {"-1", "ff"},
      {"-32", "e0"},
      {"-33", "d0df"},
      {"-128", "d080"},
      {"-129", "d1ff7f"},
      {"-32768", "d18000"},
      {"-32769", "d2ffff7fff"},
      {"-2147483648", "d280000000"},
      {"-2147483649", "d3ffffffff7fffffff"},
      {"-1e10", "d3fffffffdabf41c00"},
      {"-2^63", "d38000000000000000"},
      {"-0.0", "00"},
  };
  for (const Case& c : cases) EXPECT_EQ(PackHex(c.lua), c.expected) << c.lua;
}

TEST_F(LuaCmsgpackTest, NonIntegersAreFloat32WhenExactElseFloat64) {
  const Case cases[] = {
      {"0.5", "ca3f000000"},
      {"-0.5", "cabf000000"},
      {"1.5", "ca3fc00000"},
      {"3.5", "ca40600000"},
      {"0.1", "cb3fb999999999999a"},
      {"0.1 + 0.2", "cb3fd3333333333334"},
      {"123456789.5", "cb419d6f3456000000"},
      {"1e300", "cb7e37e43c8800759c"},
      {"1e-45", "cb3696d601ad376ab9"},
      {"1e-300", "cb01a56e1fc2f8f359"},
      // Integral but outside int64: a float, 32-bit when exact.
      {"2^63", "ca5f000000"},
      {"2^64", "ca5f800000"},
      {"3.4028234663852886e38", "ca7f7fffff"},  // FLT_MAX
      {"1e39", "cb48078287f49c4a1d"},           // beyond FLT_MAX
      {"1/0", "ca7f800000"},
      {"-1/0", "caff800000"},
  };
  for (const Case& c : cases) EXPECT_EQ(PackHex(c.lua), c.expected) << c.lua;
  // NaN is never equal to itself, so it is a float 64 with its bits kept (Redis on x86-64 packs
  // 0/0 as cbfff8000000000000; the sign of that NaN is the CPU's).
  EXPECT_EQ(PackHex("0/0").substr(0, 2), "cb");
  EXPECT_EQ(Hex(Run("return cmsgpack.pack(cmsgpack.unpack(unhex('cb7ff8000000000000')))")),
            "cb7ff8000000000000");
}

TEST_F(LuaCmsgpackTest, NilBooleansAndUnpackableTypes) {
  EXPECT_EQ(PackHex("nil, true, false"), "c0c3c2");
  EXPECT_EQ(PackHex("nil"), "c0");
  EXPECT_EQ(PackHex("nil, nil"), "c0c0");
  EXPECT_EQ(PackHex("cmsgpack.pack"), "c0");
  EXPECT_EQ(PackHex("coroutine.create(function() end)"), "c0");
}

TEST_F(LuaCmsgpackTest, StringLengthForms) {
  const struct {
    int len;
    const char* header;
  } cases[] = {
      {0, "a0"},     {1, "a1"},       {31, "bf"},       {32, "d920"},
      {255, "d9ff"}, {256, "da0100"}, {65535, "daffff"}, {65536, "db00010000"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(PackHex("string.rep('x', " + std::to_string(c.len) + ")"),
              c.header + Repeat("78", c.len))
        << c.len;
  }
  EXPECT_EQ(PackHex("'a\\0b'"), "a3610062");  // bytes, not C strings
}

TEST_F(LuaCmsgpackTest, ArraysAreTablesWithKeysOneToN) {
  const Case cases[] = {
      {"{}", "90"},  // empty: an array
      {"{n=nil}", "90"},
      {"{1,2,3}", "93010203"},
      {"{[1]=1,[2]=2,[3]=nil}", "920102"},
      {"{{1,2},{a={b={c=1}}}}", "9292010281a16181a16281a16301"},
      {"{[{}]=1}", "819001"},
      // A hole, a zero, a negative, a fraction, a string or an extra key make a map.
      {"{1,nil,3}", "8201010303"},
      {"{[1]=1,[3]=3}", "8201010303"},
      {"{[1]=1,[2]=2,[4]=4}", "83010102020404"},
      {"{[0]=1}", "810001"},
      {"{[-1]=1}", "81ff01"},
      {"{[1.5]=1}", "81ca3fc0000001"},
      {"{['1']=1}", "81a13101"},
      {"{1,2,3,x=1}", "84010102020303a17801"},
      {"{[2147483647]=1}", "81ce7fffffff01"},
      {"{[2147483648]=1}", "81ce8000000001"},
      {"{a=1}", "81a16101"},
      {"{[true]=1,[false]=2}", "82c202c301"},
      // Maps come out in lua_next order, the same in both Lua 5.1.5 builds.
      {"{a=1,b=2,c=3,d={1,2},e='x'}", "85a16101a16303a16202a165a178a164920102"},
      // Raw access: metatables change nothing.
      {"setmetatable({}, {__index=function() return 1 end})", "90"},
      {"setmetatable({1,2}, {__len=function() return 5 end})", "920102"},
  };
  for (const Case& c : cases) EXPECT_EQ(PackHex(c.lua), c.expected) << c.lua;
}

TEST_F(LuaCmsgpackTest, ContainerLengthForms) {
  EXPECT_EQ(PackHex("(function() local t = {} for i=1,16 do t[i]=i end return t end)()"),
            "dc0010" "0102030405060708090a0b0c0d0e0f10");
  EXPECT_EQ(PackHex("(function() local t = {} for i=1,16 do t['k'..i]=i end return t end)()"),
            "de0010a36b31320ca36b313610a26b3909a26b3808a26b3101a36b31350fa26b3303a26b3202a36b313"
            "40ea36b31330da36b31300aa36b31310ba26b3606a26b3707a26b3404a26b3505");
  EXPECT_EQ(Hex(Run("return string.sub(cmsgpack.pack((function() local t = {} "
                    "for i=1,65535 do t[i]=0 end return t end)()), 1, 4)")),
            "dcffff00");
  EXPECT_EQ(Hex(Run("return string.sub(cmsgpack.pack((function() local t = {} "
                    "for i=1,65536 do t[i]=0 end return t end)()), 1, 6)")),
            "dd0001000000");
  EXPECT_EQ(Hex(Run("return string.sub(cmsgpack.pack((function() local t = {} "
                    "for i=1,65536 do t[-i]=0 end return t end)()), 1, 6)")),
            "df00010000d2");
}

TEST_F(LuaCmsgpackTest, NestingBeyondSixteenTablesIsNil) {
  const std::string nest = "(function() local t = {} for i=1,%d do t = {t} end return t end)()";
  auto nested = [&](int depth) {
    std::string s = nest;
    s.replace(s.find("%d"), 2, std::to_string(depth));
    return s;
  };
  EXPECT_EQ(PackHex(nested(15)), Repeat("91", 15) + "90");  // 16 tables: all packed
  EXPECT_EQ(PackHex(nested(16)), Repeat("91", 16) + "c0");  // the 17th is nil
  EXPECT_EQ(PackHex(nested(17)), Repeat("91", 16) + "c0");
  // Keys count as a level, as values do.
  EXPECT_EQ(PackHex("{a={a={a={a={a={a={a={a={a={a={a={a={a={a={a={a={a=1}}}}}}}}}}}}}}}}}"),
            Repeat("81a161", 16) + "c0");
  // A table containing itself stops at the limit.
  EXPECT_EQ(PackHex("(function() local t = {} t[1] = t return t end)()"),
            Repeat("91", 16) + "c0");
  EXPECT_EQ(PackHex("(function() local t = {} t.x = t return t end)()"),
            Repeat("81a178", 16) + "c0");
}

TEST_F(LuaCmsgpackTest, PackConcatenatesItsArguments) {
  EXPECT_EQ(PackHex("1, 2, nil"), "0102c0");
  EXPECT_EQ(PackHex("{}, {1,2,3}, {1,nil,3}, {a=1}, {[1]=1,[3]=3}, {[0]=1}, {[1.5]=1}"),
            "9093010203820101030381a16101820101030381000181ca3fc0000001");
  EXPECT_EQ(Show("cmsgpack.unpack(cmsgpack.pack(1, 'two', {3}, nil, 5))"),
            R"(1 "two" {[1]=3} nil 5)");
}

TEST_F(LuaCmsgpackTest, PackErrors) {
  EXPECT_EQ(PackHex(""),
            "error: user_script:1: bad argument #0 to 'pack' (MessagePack pack needs input.)");
  // pack asks for room for as many values again as it has arguments (Lua allows a C function
  // 8000 stack slots), and then grows the stack exactly as Redis does, so it fails where Redis'
  // fails: 4000 numbers fit, 4001 do not; tables need a few slots more.
  const auto many = [](int n, const char* value) {
    return "#cmsgpack.pack((function() local t = {} for i=1," + std::to_string(n) + " do t[i]=" +
           value + " end return unpack(t) end)())";
  };
  EXPECT_EQ(Show(many(4000, "i")), "11618");
  EXPECT_EQ(Show(many(4001, "i")),
            "error: user_script:1: bad argument #0 to 'pack' (Too many arguments for MessagePack "
            "pack.)");
  EXPECT_EQ(Show(many(3999, "{}")), "3999");
  EXPECT_EQ(Show(many(4000, "{}")),
            "error: user_script:1: stack overflow (in function table_is_an_array)");
  EXPECT_EQ(Show(many(3996, "{a=1}")), "15984");
  EXPECT_EQ(Show(many(4000, "{a=1}")),
            "error: user_script:1: stack overflow (in function mp_encode_lua_table_as_map)");
  EXPECT_EQ(Show(many(3996, "{a={b={c={}}}}")), "39960");
  EXPECT_EQ(Show(many(3997, "{a={b={c={}}}}")),
            "error: user_script:1: stack overflow (in function table_is_an_array)");
  EXPECT_EQ(Show(many(3997, "{{{{}}}}")), "15988");
  EXPECT_EQ(Show(many(3998, "{{{{}}}}")),
            "error: user_script:1: stack overflow (in function table_is_an_array)");
}

TEST_F(LuaCmsgpackTest, UnpacksIntegers) {
  EXPECT_EQ(Show("cmsgpack.unpack(unhex('00017fcc80ccffcd0100cdffffce00010000ceffffffffcf00000001"
                 "00000000ffe0d0dfd080d1ff7fd18000d2ffff7fffd280000000d3ffffffff7fffffff'))"),
            "0 1 127 128 255 256 65535 65536 4294967295 4294967296 -1 -32 -33 -128 -129 -32768 "
            "-32769 -2147483648 -2147483649");
  // Wider forms than needed, and the signed extremes.
  EXPECT_EQ(Show("cmsgpack.unpack(unhex('cc00cd0000ce00000000d000d10000d200000000d0ffd1ffffd2ffffff"
                 "ffd07fd17fffd27fffffff'))"),
            "0 0 0 0 0 0 -1 -1 -1 127 32767 2147483647");
  // A uint 64 is read as a signed 64-bit integer, as Redis does.
  EXPECT_EQ(Show("cmsgpack.unpack(unhex('cf8000000000000000cfffffffffffffffffd38000000000000000d3ff"
                 "ffffffffffffffcf7fffffffffffffff'))"),
            "-9.2233720368547758e+18 -1 -9.2233720368547758e+18 -1 9.2233720368547758e+18");
}

TEST_F(LuaCmsgpackTest, UnpacksFloatsNilBooleansAndStrings) {
  EXPECT_EQ(Show("cmsgpack.unpack(unhex('ca3f000000cb3fb999999999999aca7f800000caff800000ca7fc00000"
                 "cb7ff8000000000000ca00000001cb0000000000000001'))"),
            "0.5 0.10000000000000001 inf -inf nan nan 1.4012984643248171e-45 "
            "4.9406564584124654e-324");
  EXPECT_EQ(Show("cmsgpack.unpack(unhex('c0c2c3'))"), "nil false true");
  EXPECT_EQ(Show("select('#', cmsgpack.unpack(unhex('c0c0c0')))"), "3");
  EXPECT_EQ(Show("cmsgpack.unpack(unhex('a0a161bf' .. string.rep('78', 31) .. "
                 "'d900d903616263da0000da0003616263db00000000db00000003616263'))"),
            R"("" "a" "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" "" "abc" "" "abc" "" "abc")");
  EXPECT_EQ(Show("cmsgpack.unpack(unhex('a26161'))"), R"("aa")");
}

TEST_F(LuaCmsgpackTest, UnpacksArraysAndMaps) {
  // A nil element leaves a hole.
  EXPECT_EQ(Show("cmsgpack.unpack(unhex('90919101dc0000dc000201029200c0dd00000000dd000000020102940"
                 "3c0c005'))"),
            "{} {[1]={[1]=1}} {} {[1]=1,[2]=2} {[1]=0} {} {[1]=1,[2]=2} {[1]=3,[4]=5}");
  EXPECT_EQ(Show("cmsgpack.unpack(unhex('8081a16101de0000de0001a16201df00000000df00000001a1630182"
                 "0102c3c0'))"),
            R"({} {["a"]=1} {} {["b"]=1} {} {["c"]=1} {[1]=2})");
  EXPECT_EQ(Show("cmsgpack.unpack(unhex('81c301'))"), "{[true]=1}");
  EXPECT_EQ(Show("cmsgpack.unpack(unhex('81c201'))"), "{[false]=1}");
  EXPECT_EQ(Show("cmsgpack.unpack(unhex('8181010281030491c0'))"), "{[{[1]=2}]={[3]=4}} {}");
  // A nil value is no entry.
  EXPECT_EQ(Show("cmsgpack.unpack(unhex('82a161010161'))"), R"({[1]=97,["a"]=1})");
  // Keys Lua refuses raise Lua's own error, without a position.
  EXPECT_EQ(Show("cmsgpack.unpack(unhex('81c001'))"), "error: table index is nil");
  EXPECT_EQ(Show("cmsgpack.unpack(unhex('81cbfff800000000000001'))"), "error: table index is NaN");
}

TEST_F(LuaCmsgpackTest, RoundTrips) {
  EXPECT_EQ(Show("cmsgpack.unpack(cmsgpack.pack({1,2,{a={b='c'}},'x',true,false,0.25,-7}))"),
            R"({[1]=1,[2]=2,[3]={["a"]={["b"]="c"}},[4]="x",[5]=true,[6]=false,[7]=0.25,[8]=-7})");
  const Case repacked[] = {
      // Maps are rebuilt in Lua's hash order; short ones shrink to fix forms.
      {"de0003a16101a16202a16303", "83a16101a16303a16202"},
      {"9301c003", "8201010303"},  // the nil hole makes it a map
      {"dc0003010203", "93010203"},
      {"cf0000000000000001d30000000000000001", "0101"},
      {"ca3dcccccd", "ca3dcccccd"},
  };
  for (const Case& c : repacked) {
    EXPECT_EQ(
        Hex(Run(std::string("return cmsgpack.pack(cmsgpack.unpack(unhex('") + c.lua + "')))")),
        c.expected)
        << c.lua;
  }
}

TEST_F(LuaCmsgpackTest, MalformedInput) {
  // Not readable by lua-cmsgpack 0.4.0: 0xc1, bin, ext, fixext.
  for (const char* input : {"c1", "c40161", "c5000161", "c60000000161", "c7010161", "d40161",
                            "d80100000000000000000000000000000000", "0102c1", "92c1", "9201c1"}) {
    EXPECT_EQ(Show(std::string("cmsgpack.unpack(unhex('") + input + "'))"),
              "error: user_script:1: Bad data format in input.")
        << input;
  }
}

TEST_F(LuaCmsgpackTest, TruncatedInput) {
  for (const char* input :
       {"cc", "cd00", "ce000000", "cf00000000000000", "d0", "d100", "d2000000", "d300000000000000",
        "ca000000", "cb00000000000000", "a1", "d9", "d901", "da00", "da0001", "db000000",
        "db00000001", "91", "dc00", "dc0001", "dd000000", "dd00000001", "81", "8101", "de00",
        "de0001", "df000000", "df00000001", "ddffffffff", "dbffffffff", "9201", "0102cc"}) {
    EXPECT_EQ(Show(std::string("cmsgpack.unpack(unhex('") + input + "'))"),
              "error: user_script:1: Missing bytes in input.")
        << input;
  }
}

TEST_F(LuaCmsgpackTest, UnpackOne) {
  const Case cases[] = {
      {"'\\1\\2\\3'", "1 1"},
      {"'\\1\\2\\3', 1", "2 2"},
      {"'\\1\\2\\3', 2", "-1 3"},
      {"'\\1\\2\\3', 3", "-1"},  // at the end: nothing left
      {"unhex('92010203')", "3 {[1]=1,[2]=2}"},
      {"unhex('92010203'), 3", "-1 3"},
      {"unhex('92010203c1'), 3", "4 3"},  // stops before the bad byte
      {"unhex('c1'), 1", "-1"},
      {"unhex('0102'), 1.9", "-1 2"},  // offsets truncate
      {"unhex('0102'), '1'", "-1 2"},
      {"unhex('0102'), nil", "1 1"},
      {"''", "-1"},
      {"12", "1 49"},  // a number is taken as its string, "12"
      {"'\\1\\2\\3', 4", "error: user_script:1: Start offset 4 greater than input length 3."},
      {"'', 1", "error: user_script:1: Start offset 1 greater than input length 0."},
      // Redis prints the input's length as the "limit".
      {"'\\1\\2\\3', -1",
       "error: user_script:1: Invalid request to unpack with offset of -1 and limit of 3."},
      {"'\\1\\2\\3', 'x'",
       "error: user_script:1: bad argument #2 to 'unpack_one' (number expected, got string)"},
      {"", "error: user_script:1: bad argument #1 to 'unpack_one' (string expected, got no value)"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Show(std::string("cmsgpack.unpack_one(") + c.lua + ")"), c.expected) << c.lua;
  }
}

TEST_F(LuaCmsgpackTest, UnpackLimit) {
  const Case cases[] = {
      {"'\\1\\2\\3', 2", "2 1 2"},
      {"'\\1\\2\\3', 3", "-1 1 2 3"},
      {"'\\1\\2\\3', 5", "-1 1 2 3"},
      {"'\\1\\2\\3', 2, 1", "-1 2 3"},
      {"'\\1\\2\\3', 1, 3", "-1"},
      {"'\\1\\2\\3', 0", "1 2 3"},  // limit 0 at offset 0 is plain unpack: no offset returned
      {"'\\1\\2\\3', 0, 1", "1"},
      {"'\\1\\2\\3', 1.5", "1 1"},
      {"unhex('c0c0c0'), 2", "2 nil nil"},
      {"'', 0", ""},
      {"'', 1", "-1"},
      {"'\\1\\2\\3', -1",
       "error: user_script:1: Invalid request to unpack with offset of 0 and limit of 3."},
      {"'\\1\\2\\3', 1, -5",
       "error: user_script:1: Invalid request to unpack with offset of -5 and limit of 3."},
      {"'\\1\\2\\3', 1, 10", "error: user_script:1: Start offset 10 greater than input length 3."},
      {"'\\1\\2\\3'",
       "error: user_script:1: bad argument #2 to 'unpack_limit' (number expected, got no value)"},
      {"'\\1\\2\\3', 'x'",
       "error: user_script:1: bad argument #2 to 'unpack_limit' (number expected, got string)"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Show(std::string("cmsgpack.unpack_limit(") + c.lua + ")"), c.expected) << c.lua;
  }
}

TEST_F(LuaCmsgpackTest, UnpackArgumentsAndEmptyInput) {
  EXPECT_EQ(Show("cmsgpack.unpack('')"), "");
  EXPECT_EQ(Show("cmsgpack.unpack('', 5)"), "");  // extra arguments are ignored
  EXPECT_EQ(Show("cmsgpack.unpack(1)"), "49");
  EXPECT_EQ(Show("cmsgpack.unpack()"),
            "error: user_script:1: bad argument #1 to 'unpack' (string expected, got no value)");
  EXPECT_EQ(Show("cmsgpack.unpack(nil)"),
            "error: user_script:1: bad argument #1 to 'unpack' (string expected, got nil)");
  EXPECT_EQ(Show("cmsgpack.unpack({})"),
            "error: user_script:1: bad argument #1 to 'unpack' (string expected, got table)");
}

TEST_F(LuaCmsgpackTest, UnpackStackLimits) {
  // Every value returned takes a stack slot, of the 8000 a C function may use.
  EXPECT_EQ(Show("#{cmsgpack.unpack(string.rep('\\1', 7999))}"), "7999");
  const std::string too_many =
      "error: user_script:1: stack overflow (too many return values at once; use unpack_one or "
      "unpack_limit instead.)";
  EXPECT_EQ(Show("#{cmsgpack.unpack(string.rep('\\1', 8000))}"), too_many);
  EXPECT_EQ(Show("#{cmsgpack.unpack(string.rep('\\1', 10000))}"), too_many);
  EXPECT_EQ(Show("#{cmsgpack.unpack_limit(string.rep('\\1', 10000), 100)}"), "101");
  // Nested input is bounded the same way: each array level holds a table and an index.
  EXPECT_EQ(Show("type(cmsgpack.unpack(string.rep('\\145', 3000) .. '\\1'))"), R"("table")");
  EXPECT_EQ(Show("type(cmsgpack.unpack(string.rep('\\145', 4000) .. '\\1'))"),
            "error: user_script:1: stack overflow (in function mp_decode_to_lua_array)");
  EXPECT_EQ(Show("type(cmsgpack.unpack(string.rep('\\129\\1', 3000) .. '\\1'))"), R"("table")");
  EXPECT_EQ(Show("type(cmsgpack.unpack(string.rep('\\129\\1', 8000) .. '\\1'))"), too_many);
}

// Out of memory (our own behaviour: Redis' buffer code would crash). pack's buffer comes from the
// state's allocator; when that refuses, pack raises "not enough memory" and frees what it had (a
// leak would show under ASan when the state closes).
size_t g_memory_budget = SIZE_MAX;
size_t g_memory_used = 0;

void* BudgetAlloc(void* ud, void* ptr, size_t osize, size_t nsize) {
  const size_t old_size = ptr != nullptr ? osize : 0;
  if (nsize == 0) {
    std::free(ptr);
    g_memory_used -= old_size;
    return nullptr;
  }
  if (nsize > old_size && g_memory_used + (nsize - old_size) > g_memory_budget) return nullptr;
  void* p = std::realloc(ptr, nsize);
  if (p != nullptr) g_memory_used = g_memory_used - old_size + nsize;
  return p;
}

class LuaCmsgpackMemoryTest : public LuaCmsgpackTest {
 protected:
  LuaCmsgpackMemoryTest() : LuaCmsgpackTest(lua_newstate(BudgetAlloc, nullptr)) {}
  ~LuaCmsgpackMemoryTest() override { g_memory_budget = SIZE_MAX; }
};

TEST_F(LuaCmsgpackMemoryTest, PackFailsCleanlyWhenMemoryRunsOut) {
  ASSERT_EQ(Run("big = string.rep('x', 1000000) return ''"), "");
  g_memory_budget = g_memory_used + 500000;
  EXPECT_EQ(Run("return cmsgpack.pack(big)"), "error: not enough memory");
  g_memory_budget = SIZE_MAX;
  EXPECT_EQ(Show("#cmsgpack.pack(big)"), "1000005");
}

}  // namespace
}  // namespace shardis::core
