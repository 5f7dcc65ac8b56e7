// Tests of the loop IR interpreter: arithmetic semantics, control flow, locals and errors.
#include "compiler_core/ir/loop/interpreter.h"

#include <vector>

#include "gtest/gtest.h"

namespace kiln::loop {
namespace {

TEST(InterpreterTest, ElementwiseNest) {
  BufferRef x = MakeBuffer("x", DType::kFloat32, {2, 3});
  BufferRef y = MakeBuffer("y", DType::kFloat32, {2, 3});
  Var i = MakeVar("i"), j = MakeVar("j");
  Expr xv = Load(x, {VarRef(i), VarRef(j)});
  Func f;
  f.name = "relu";
  f.params = {x, y};
  f.body = For(i, 2, For(j, 3, Store(y, {VarRef(i), VarRef(j)}, Max(xv, FloatImm(0)))));
  std::vector<float> in = {-1, 2, -3, 4, -5, 6}, out(6, 7);
  ASSERT_TRUE(InterpretFunc(f, {in.data(), out.data()}).ok());
  EXPECT_EQ(out, (std::vector<float>{0, 2, 0, 4, 0, 6}));
}

TEST(InterpreterTest, IntegerDivisionSemantics) {
  BufferRef y = MakeBuffer("y", DType::kInt64, {4});
  Func f;
  f.name = "div";
  f.params = {y};
  Expr a = IntImm(-7), b = IntImm(2);
  f.body = Block({Store(y, {IntImm(0)}, Binary(BinaryOp::kDiv, a, b)),
                  Store(y, {IntImm(1)}, Binary(BinaryOp::kFloorDiv, a, b)),
                  Store(y, {IntImm(2)}, Binary(BinaryOp::kFloorMod, a, b)),
                  Store(y, {IntImm(3)}, Binary(BinaryOp::kFloorMod, IntImm(7), IntImm(-2)))});
  std::vector<int64_t> out(4);
  ASSERT_TRUE(InterpretFunc(f, {out.data()}).ok());
  EXPECT_EQ(out, (std::vector<int64_t>{-3, -4, 1, -1}));
}

TEST(InterpreterTest, CastsIfAndInt32Wrap) {
  BufferRef y = MakeBuffer("y", DType::kInt32, {3});
  BufferRef z = MakeBuffer("z", DType::kBool, {1});
  Func f;
  f.name = "casts";
  f.params = {y, z};
  f.body = Block({
      Store(y, {IntImm(0)}, Cast(DType::kInt32, FloatImm(-2.7))),
      Store(y, {IntImm(1)}, IntImm(2147483647, DType::kInt32) + IntImm(1, DType::kInt32)),
      IfThenElse(Binary(BinaryOp::kLt, IntImm(1), IntImm(2)),
                 Store(y, {IntImm(2)}, IntImm(5, DType::kInt32)),
                 Store(y, {IntImm(2)}, IntImm(6, DType::kInt32))),
      Store(z, {IntImm(0)}, Cast(DType::kBool, FloatImm(0.5))),
  });
  std::vector<int32_t> out(3);
  uint8_t flag = 0;
  ASSERT_TRUE(InterpretFunc(f, {out.data(), &flag}).ok());
  EXPECT_EQ(out, (std::vector<int32_t>{-2, -2147483648, 5}));
  EXPECT_EQ(flag, 1);
}

TEST(InterpreterTest, Dot4U8S8MultipliesUnsignedBytesBySignedBytes) {
  BufferRef y = MakeBuffer("y", DType::kInt32, {3});
  Func f;
  f.name = "dot4";
  f.params = {y};
  auto word = [](uint32_t w) { return IntImm(static_cast<int32_t>(w), DType::kInt32); };
  auto dot = [](Expr a, Expr b) { return Binary(BinaryOp::kDot4U8S8, a, b); };
  f.body = Block({
      // bytes (1, 2, 3, 4) · (-1, 2, -3, 4) = -1 + 4 - 9 + 16
      Store(y, {IntImm(0)}, dot(word(0x04030201u), word(0x04fd02ffu))),
      // 255 · -128 in every byte
      Store(y, {IntImm(1)}, dot(word(0xffffffffu), word(0x80808080u))),
      // an accumulation: 7 + 200 · 127
      Store(y, {IntImm(2)}, IntImm(7, DType::kInt32) + dot(word(200), word(127))),
  });
  std::vector<int32_t> out(3);
  ASSERT_TRUE(InterpretFunc(f, {out.data()}).ok());
  EXPECT_EQ(out, (std::vector<int32_t>{10, -4 * 255 * 128, 7 + 200 * 127}));
}

TEST(InterpreterTest, LocalBufferAccumulates) {
  BufferRef x = MakeBuffer("x", DType::kFloat32, {4});
  BufferRef y = MakeBuffer("y", DType::kFloat32, {});
  BufferRef acc = MakeBuffer("acc", DType::kFloat32, {1}, Buffer::Scope::kLocal);
  Var k = MakeVar("k");
  Func f;
  f.name = "sum";
  f.params = {x, y};
  f.body = Allocate(
      acc, Block({For(k, 4,
                      Store(acc, {IntImm(0)},
                            Load(acc, {IntImm(0)}) + Load(x, {VarRef(k)})),
                      ForKind::kSerial, /*is_reduction=*/true),
                  Store(y, {}, Load(acc, {IntImm(0)}))}));
  std::vector<float> in = {1, 2, 3, 4};
  float out = 0;
  ASSERT_TRUE(InterpretFunc(f, {in.data(), &out}).ok());
  EXPECT_EQ(out, 10);
}

TEST(InterpreterTest, SelectEvaluatesBothArmsSoOutOfBoundsLoadFails) {
  BufferRef x = MakeBuffer("x", DType::kFloat32, {2});
  BufferRef y = MakeBuffer("y", DType::kFloat32, {3});
  Var i = MakeVar("i");
  Expr in_bounds = Binary(BinaryOp::kLt, VarRef(i), IntImm(2));
  Func f;
  f.name = "oob";
  f.params = {x, y};
  f.body = For(i, 3, Store(y, {VarRef(i)}, Select(in_bounds, Load(x, {VarRef(i)}), FloatImm(0))));
  std::vector<float> in = {1, 2}, out(3);
  absl::Status s = InterpretFunc(f, {in.data(), out.data()});
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("%x[2]"), absl::string_view::npos) << s;
}

TEST(InterpreterTest, WrongArgumentCount) {
  Func f;
  f.name = "k";
  f.params = {MakeBuffer("x", DType::kFloat32, {1})};
  f.body = Block({});
  EXPECT_EQ(InterpretFunc(f, {}).code(), absl::StatusCode::kInvalidArgument);
}

TEST(InterpreterTest, F32RoundingAfterEachOp) {
  BufferRef y = MakeBuffer("y", DType::kFloat32, {1});
  Func f;
  f.name = "round";
  f.params = {y};
  // In f32, 1e8 + 1 == 1e8, so the difference is 0 (it would be 1 in double).
  f.body = Store(y, {IntImm(0)}, (FloatImm(1e8) + FloatImm(1)) - FloatImm(1e8));
  float out = -1;
  ASSERT_TRUE(InterpretFunc(f, {&out}).ok());
  EXPECT_EQ(out, 0.0f);
}

}  // namespace
}  // namespace kiln::loop
