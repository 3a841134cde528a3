#include "engine/runtime/stop_checker.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace tessera::runtime {
namespace {

constexpr int32_t kEos = 2;

struct Step {
  int32_t id;
  std::string text;
};

struct Transcript {
  std::vector<std::string> emitted;  // per token
  std::string all;
  std::optional<FinishReason> finish;
  int tokens_consumed = 0;
};

// Feeds tokens until the checker finishes, then (if it did not) calls Finish().
Transcript Feed(StopChecker& checker, const std::vector<Step>& steps) {
  Transcript run;
  for (const Step& step : steps) {
    ++run.tokens_consumed;
    StopChecker::Result r = checker.OnToken(step.id, step.text, run.tokens_consumed);
    run.emitted.push_back(r.text_to_emit);
    run.all += r.text_to_emit;
    if (r.finish.has_value()) {
      run.finish = r.finish;
      return run;
    }
  }
  StopChecker::Result r = checker.Finish();
  EXPECT_FALSE(r.finish.has_value());
  run.all += r.text_to_emit;
  return run;
}

StoppingParams WithStops(std::vector<std::string> stops) {
  StoppingParams p;
  p.stop_strings = std::move(stops);
  return p;
}

TEST(StopCheckerTest, FinishReasonNames) {
  EXPECT_EQ(FinishReasonName(FinishReason::kLength), "length");
  EXPECT_EQ(FinishReasonName(FinishReason::kStop), "stop");
  EXPECT_EQ(FinishReasonName(FinishReason::kEos), "eos");
  EXPECT_EQ(FinishReasonName(FinishReason::kCancelled), "cancelled");
}

TEST(StopCheckerTest, StopStringSplitAcrossThreeTokensIsNeverEmitted) {
  StopChecker c(WithStops({"<|end|>"}), {kEos});
  Transcript run = Feed(c, {{10, "Hello <|"}, {11, "en"}, {12, "d|> more"}, {13, "never"}});
  EXPECT_EQ(run.emitted, (std::vector<std::string>{"Hello ", "", ""}));
  EXPECT_EQ(run.all, "Hello ");
  EXPECT_EQ(run.finish, FinishReason::kStop);
  EXPECT_EQ(run.tokens_consumed, 3);
}

TEST(StopCheckerTest, HeldTextIsReleasedWhenTheMatchFails) {
  StopChecker c(WithStops({"<|end|>"}), {kEos});
  Transcript run = Feed(c, {{10, "a <|"}, {11, "en"}, {12, "try"}});
  EXPECT_EQ(run.emitted, (std::vector<std::string>{"a ", "", "<|entry"}));
  EXPECT_FALSE(run.finish.has_value());
}

TEST(StopCheckerTest, StopStringAtTheVeryStart) {
  StopChecker c(WithStops({"STOP"}), {kEos});
  Transcript run = Feed(c, {{5, "STOP and more"}});
  EXPECT_EQ(run.all, "");
  EXPECT_EQ(run.finish, FinishReason::kStop);

  StopChecker split(WithStops({"STOP"}), {kEos});
  run = Feed(split, {{5, "ST"}, {6, "OP"}});
  EXPECT_EQ(run.emitted, (std::vector<std::string>{"", ""}));
  EXPECT_EQ(run.finish, FinishReason::kStop);
}

TEST(StopCheckerTest, OverlappingPrefixes) {
  // "aab" contains "ab" starting at 1; the first "a" is a false start that must be released.
  StopChecker one_token(WithStops({"ab"}), {kEos});
  Transcript run = Feed(one_token, {{1, "aab"}});
  EXPECT_EQ(run.all, "a");
  EXPECT_EQ(run.finish, FinishReason::kStop);

  StopChecker per_char(WithStops({"ab"}), {kEos});
  run = Feed(per_char, {{1, "a"}, {1, "a"}, {3, "b"}});
  EXPECT_EQ(run.emitted, (std::vector<std::string>{"", "a", ""}));
  EXPECT_EQ(run.finish, FinishReason::kStop);

  // A self-overlapping stop string: "aab" in "aaab".
  StopChecker self(WithStops({"aab"}), {kEos});
  run = Feed(self, {{1, "a"}, {1, "a"}, {1, "a"}, {3, "b!"}});
  EXPECT_EQ(run.emitted, (std::vector<std::string>{"", "", "a", ""}));
  EXPECT_EQ(run.all, "a");
}

TEST(StopCheckerTest, IncludeStopStringInOutput) {
  StoppingParams p = WithStops({"<|end|>"});
  p.include_stop_string_in_output = true;
  StopChecker c(p, {kEos});
  Transcript run = Feed(c, {{10, "Hello <|"}, {11, "en"}, {12, "d|> more"}});
  EXPECT_EQ(run.all, "Hello <|end|>");
  EXPECT_EQ(run.finish, FinishReason::kStop);
}

TEST(StopCheckerTest, FirstCompletedStopStringWins) {
  // Streaming character by character, "b" completes before "abc", so the cut is at "b".
  StopChecker c(WithStops({"abc", "b"}), {kEos});
  Transcript run = Feed(c, {{1, "xabc"}});
  EXPECT_EQ(run.all, "xa");
  // Same end: the longer (earlier-starting) one.
  StopChecker tie(WithStops({"c", "abc"}), {kEos});
  run = Feed(tie, {{1, "xabc"}});
  EXPECT_EQ(run.all, "x");
}

TEST(StopCheckerTest, MaxNewTokensFlushesHeldText) {
  StoppingParams p = WithStops({"xyz"});
  p.max_new_tokens = 3;
  StopChecker c(p, {kEos});
  Transcript run = Feed(c, {{1, "one "}, {12, "two "}, {3, "x"}, {4, "yz"}});
  EXPECT_EQ(run.emitted, (std::vector<std::string>{"one ", "two ", "x"}));
  EXPECT_EQ(run.finish, FinishReason::kLength);
  EXPECT_EQ(run.tokens_consumed, 3);
}

TEST(StopCheckerTest, StopStringBeatsLengthOnTheSameToken) {
  StoppingParams p = WithStops({"!"});
  p.max_new_tokens = 1;
  StopChecker c(p, {kEos});
  Transcript run = Feed(c, {{1, "hi!"}});
  EXPECT_EQ(run.all, "hi");
  EXPECT_EQ(run.finish, FinishReason::kStop);
}

TEST(StopCheckerTest, EosStopsUnlessIgnored) {
  StopChecker c(WithStops({"zz"}), {kEos, 7});
  Transcript run = Feed(c, {{1, "a z"}, {kEos, "</s>"}, {1, "never"}});
  EXPECT_EQ(run.all, "a z");  // held "z" released, EOS text dropped
  EXPECT_EQ(run.finish, FinishReason::kEos);

  StopChecker second(StoppingParams{}, {kEos, 7});
  EXPECT_EQ(Feed(second, {{7, ""}}).finish, FinishReason::kEos);

  StoppingParams ignore;
  ignore.ignore_eos = true;
  ignore.max_new_tokens = 3;
  StopChecker ignoring(ignore, {kEos});
  run = Feed(ignoring, {{1, "a"}, {kEos, "</s>"}, {1, "b"}, {1, "never"}});
  EXPECT_EQ(run.all, "a</s>b");
  EXPECT_EQ(run.finish, FinishReason::kLength);
}

TEST(StopCheckerTest, StopTokenIds) {
  StoppingParams p;
  p.stop_token_ids = {42};
  p.ignore_eos = true;  // stop_token_ids still apply
  StopChecker c(p, {kEos});
  Transcript run = Feed(c, {{1, "text"}, {42, "<stop>"}});
  EXPECT_EQ(run.all, "text");
  EXPECT_EQ(run.finish, FinishReason::kStop);

  p.include_stop_string_in_output = true;
  StopChecker keep(p, {kEos});
  run = Feed(keep, {{1, "text"}, {42, "<stop>"}});
  EXPECT_EQ(run.all, "text<stop>");
  EXPECT_EQ(run.finish, FinishReason::kStop);
}

TEST(StopCheckerTest, FinishFlushesHeldTextAndCallsAfterStopAreInert) {
  StopChecker c(WithStops({"###"}), {kEos});
  EXPECT_EQ(c.OnToken(1, "end #", 1).text_to_emit, "end ");
  EXPECT_EQ(c.OnToken(1, "#", 2).text_to_emit, "");
  StopChecker::Result r = c.Finish();
  EXPECT_EQ(r.text_to_emit, "##");
  EXPECT_FALSE(r.finish.has_value());
  EXPECT_TRUE(c.finished());

  StopChecker stopped(WithStops({"x"}), {kEos});
  EXPECT_EQ(stopped.OnToken(1, "x", 1).finish, FinishReason::kStop);
  StopChecker::Result again = stopped.OnToken(1, "more", 2);
  EXPECT_EQ(again.text_to_emit, "");
  EXPECT_EQ(again.finish, FinishReason::kStop);
  EXPECT_EQ(stopped.Finish().text_to_emit, "");
}

TEST(StopCheckerTest, NoStopStringsEmitsEverythingImmediately) {
  StopChecker c(StoppingParams{}, {kEos});
  Transcript run = Feed(c, {{1, "a"}, {1, "bc"}, {1, ""}, {1, "d"}});
  EXPECT_EQ(run.emitted, (std::vector<std::string>{"a", "bc", "", "d"}));
}

TEST(StopCheckerTest, ConcatenationDoesNotDependOnTokenization) {
  // Every split of the same text into tokens yields the same output.
  const std::string text = "say ab<a><ab</a> then </ab> done";
  const StoppingParams p = WithStops({"</ab>", "<b>"});
  StopChecker whole(p, {kEos});
  const Transcript reference = Feed(whole, {{1, text}});
  EXPECT_EQ(reference.all, "say ab<a><ab</a> then ");
  for (size_t a = 1; a < text.size(); ++a) {
    for (size_t b = a; b < text.size(); b += 3) {
      StopChecker c(p, {kEos});
      Transcript run =
          Feed(c, {{1, text.substr(0, a)}, {1, text.substr(a, b - a)}, {1, text.substr(b)}});
      EXPECT_EQ(run.all, reference.all) << a << " " << b;
      EXPECT_EQ(run.finish, FinishReason::kStop);
    }
  }
}

}  // namespace
}  // namespace tessera::runtime
