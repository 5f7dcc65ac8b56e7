// The GPU math library (emit_gpu_math.cc) against libm in double precision, run on this CPU: a
// host target with emulate_gpu set emits the same inline f32 code the NVPTX target does.
// Each function is checked on a dense sweep of its domain plus special values: the error must
// be within 4 ulp-ish relative (4e-6 |reference|) or 2e-7 absolute, and specials exact.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "compiler_core/codegen/llvm/test_util.h"
#include "compiler_core/ir/loop/parser.h"
#include "gtest/gtest.h"

namespace kiln::codegen {
namespace {

using testing::CallKernel;
using testing::CompileAndLoad;
using testing::HostTarget;

constexpr float kInf = std::numeric_limits<float>::infinity();

// Runs `expr` (over %a[i] and %b[i]) elementwise through the GPU math library on the host.
std::vector<float> RunGpuMath(const std::string& expr, const std::vector<float>& a,
                              const std::vector<float>& b) {
  const std::string n = std::to_string(a.size());
  const std::string text = "func @f(%a: f32[" + n + "], %b: f32[" + n + "], %y: f32[" + n +
                           "]) anchor=Exp {\n  for i in 0.." + n + " {\n    %y[i] = " + expr +
                           "\n  }\n}\n";
  absl::StatusOr<loop::Func> func = loop::ParseFunc(text);
  EXPECT_TRUE(func.ok()) << func.status();
  Target target = HostTarget();
  target.emulate_gpu = true;
  auto kernels = CompileAndLoad({*func}, target);
  EXPECT_TRUE(kernels.ok()) << kernels.status();
  std::vector<float> y(a.size());
  if (!kernels.ok()) return y;
  CallKernel((*kernels)->Get("f"),
             {const_cast<float*>(a.data()), const_cast<float*>(b.data()), y.data()});
  return y;
}

// `count` points evenly over [lo, hi].
std::vector<float> Sweep(double lo, double hi, int count) {
  std::vector<float> v;
  for (int i = 0; i < count; ++i) v.push_back(static_cast<float>(lo + (hi - lo) * i / (count - 1)));
  return v;
}

void ExpectClose(const std::string& what, const std::vector<float>& x,
                 const std::vector<float>& got, double (*ref)(double)) {
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = ref(x[i]);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got[i])) << what << "(" << x[i] << ") = " << got[i];
      continue;
    }
    if (std::isinf(want)) {
      EXPECT_EQ(got[i], static_cast<float>(want)) << what << "(" << x[i] << ")";
      continue;
    }
    const double err = std::fabs(got[i] - want);
    worst = std::max(worst, err / std::max(std::fabs(want), 1e-30));
    EXPECT_LE(err, 2e-7 + 4e-6 * std::fabs(want))
        << what << "(" << x[i] << ") = " << got[i] << ", libm " << want;
  }
  std::cout << what << ": worst relative error " << worst << " over " << x.size() << " points\n";
}

struct Unary {
  const char* name;
  double (*ref)(double);
  double lo, hi;
};

TEST(GpuMathTest, UnaryFunctionsMatchLibm) {
  for (const Unary& f : {Unary{"exp", [](double x) { return std::exp(x); }, -87, 88},
                         Unary{"log", [](double x) { return std::log(x); }, 1e-6, 1e6},
                         Unary{"tanh", [](double x) { return std::tanh(x); }, -12, 12},
                         Unary{"erf", [](double x) { return std::erf(x); }, -6, 6},
                         Unary{"sin", [](double x) { return std::sin(x); }, -100, 100},
                         Unary{"cos", [](double x) { return std::cos(x); }, -100, 100},
                         Unary{"atan", [](double x) { return std::atan(x); }, -50, 50},
                         Unary{"asin", [](double x) { return std::asin(x); }, -1, 1},
                         Unary{"acos", [](double x) { return std::acos(x); }, -1, 1},
                         Unary{"sinh", [](double x) { return std::sinh(x); }, -80, 80},
                         Unary{"cosh", [](double x) { return std::cosh(x); }, -80, 80},
                         Unary{"asinh", [](double x) { return std::asinh(x); }, -1e4, 1e4},
                         Unary{"acosh", [](double x) { return std::acosh(x); }, 1, 1e4},
                         Unary{"atanh", [](double x) { return std::atanh(x); }, -0.999, 0.999}}) {
    std::vector<float> x = Sweep(f.lo, f.hi, 20001);
    // Small magnitudes, where series and identities cancel, and the specials.
    for (float v : Sweep(-0.75, 0.75, 3001)) x.push_back(v);
    for (float v : {0.0f, -0.0f, 1e-20f, -1e-20f, 1e-3f, 0.4999f, 0.5f, 0.5001f, kInf, -kInf,
                    std::numeric_limits<float>::quiet_NaN()}) {
      x.push_back(v);
    }
    std::vector<float> y = RunGpuMath(std::string(f.name) + "(%a[i])", x, x);
    ExpectClose(f.name, x, y, f.ref);
  }
}

TEST(GpuMathTest, TanOutsideItsPoles) {
  std::vector<float> x = Sweep(-1.5, 1.5, 20001);
  ExpectClose("tan", x, RunGpuMath("tan(%a[i])", x, x), [](double v) { return std::tan(v); });
}

TEST(GpuMathTest, LogOfSubnormalsZeroAndNegatives) {
  std::vector<float> x = {1e-40f, 1e-45f, 3e-39f, 0.0f, -1.0f, 1.0f, 2.0f, 0.5f};
  std::vector<float> y = RunGpuMath("log(%a[i])", x, x);
  ExpectClose("log", x, y, [](double v) { return std::log(v); });
  EXPECT_EQ(y[3], -kInf);
  EXPECT_TRUE(std::isnan(y[4]));
  EXPECT_EQ(y[5], 0.0f);
}

TEST(GpuMathTest, PowMatchesLibm) {
  std::vector<float> a, b;
  for (float base : {0.0f, 0.5f, 1.0f, 2.0f, 3.7f, 10.0f, 123.4f, -2.0f, -0.5f, -3.0f}) {
    for (float e : {0.0f, 1.0f, 2.0f, 3.0f, -1.0f, -2.0f, 0.5f, 1.5f, -0.5f, 7.0f, 2.5f}) {
      a.push_back(base);
      b.push_back(e);
    }
  }
  std::vector<float> y = RunGpuMath("pow(%a[i], %b[i])", a, b);
  for (size_t i = 0; i < a.size(); ++i) {
    const double want = std::pow(static_cast<double>(a[i]), static_cast<double>(b[i]));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(y[i])) << "pow(" << a[i] << ", " << b[i] << ") = " << y[i];
    } else if (std::isinf(want)) {
      EXPECT_EQ(y[i], static_cast<float>(want)) << "pow(" << a[i] << ", " << b[i] << ")";
    } else {
      EXPECT_NEAR(y[i], want, 2e-7 + 4e-6 * std::fabs(want))
          << "pow(" << a[i] << ", " << b[i] << ")";
    }
  }
}

}  // namespace
}  // namespace kiln::codegen
