// The conclusions reports/paper-claims/README.md states about its data, each checked on the
// committed data in reports/paper-claims/data/: regenerating the page with results that falsify
// one fails here. Each check quotes the words of the page it checks and finds them there, and
// every sentence of the page's Conditions paragraphs is either checked or an explanation listed
// below, so that a new conclusion cannot go unchecked. The figures the page's sentences quote
// are generated from the data (scripts/paper-claims), and check-paper-claims-page checks that the
// committed page is what its data gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "ralp/model/model_zoo.hpp"
#include "ralp/reports/records.hpp"

namespace ralp::reports {
namespace {

const std::string kPage = RALP_SOURCE_DIR "/reports/paper-claims";
const std::string kData = kPage + "/data";

// The page's words each check quotes, and the sentences of its Conditions paragraphs that explain
// a result rather than state one (no data can check why).
constexpr const char* kGrowsWithWorkers =
    "For the models whose parameters sit in the FC head (VGG-16, AlexNet) the speedup grows with "
    "the worker count and falls as the bandwidth rises";
constexpr const char* kThirteenX =
    "13x is reached only by them: VGG-16 on the two slower links, AlexNet on every link of the "
    "grid";
constexpr const char* kSmallModels =
    "ResNet-50 and Inception-v3, whose parameters are few and mostly in the convolutions, reach "
    "2.3x on the slowest link, and on faster ones at most with a single worker";
constexpr const char* kOneWorker = "Even one worker gains";
constexpr const char* kBothInRange =
    "The paper's \"up to 13x\" and the page's \"up to 2.3x\" are thus both within ralp's range";
constexpr const char* kAutoCut =
    "the cut the placement search finds fastest, which is often earlier than the first FC layer";
constexpr const char* kSetup =
    "Predictions use GPU profiles fitted to published kernel timings (GTX 1080 Ti, the paper's "
    "era, and V100, Stanza's), batch 32 per worker, one parameter server, a star network with 50 us links and "
    "SimGrid's TCP model";
constexpr const char* kVggScales =
    "The claim holds for VGG-16 at small and middling worker counts only (the last column "
    "above); at the largest counts the one PS link saturates and all-reduce scales better, at "
    "every bandwidth of the grid";
constexpr const char* kResNetScales =
    "For ResNet-50, whose gradients are small, all-reduce is the faster of the two at every "
    "worker count";
constexpr const char* kBoundaryOnly =
    "What RALP sends to the head PS is the boundary activation (batch x 25,088 floats at fc6) "
    "plus labels, whatever the head's width; ralp@fc6 still pushes the convolutions' gradients "
    "to the same PS, which hybrid@fc6 all-reduces among the workers instead, leaving only the "
    "boundary on the PS link";
constexpr const char* kTimeNotTraffic =
    "The claim holds for the head's parameters; the convolutions' parameters are still moved, "
    "and a head too large for the PS's compute would cost time, not traffic";
constexpr const char* kWhoSplits =
    "The models whose parameters sit in a large FC head (the AlexNets, the VGGs, the CIFAR "
    "AlexNet) split; those with small heads (the ResNets, GoogLeNet, Inception-v3, the "
    "all-convolutional CIFAR net) lose against all-reduce at their best cut, and the search says "
    "not to split";
constexpr const char* kMarginShrinks =
    "The margin of the models that split shrinks as the bandwidth rises, except VGG-11's, which "
    "stays within two points";
constexpr const char* kCutMoves =
    "their best cut stays or moves later in the model, towards the FC head, on the faster link";
constexpr const char* kCompressionHelps =
    "where those pushes limit the step (many workers on one PS link) RALP gets faster, most with "
    "int8 and top-k; with few workers, or where the head PS's compute or the boundary "
    "activations limit the step, compression changes little and its encoding costs a little";
constexpr const char* kAllreduceGainsMore =
    "All-reduce compresses all of its traffic, so it gains more; wherever RALP is ahead of "
    "all-reduce without compression, its lead shrinks under every compression";
constexpr const char* kLossesAgree = "so from the same seed and data the losses agree step by step";

constexpr const char* kWireDecides =
    "On the 1 Gbps link the transport moves RALP's speedup over ps by less than 5%: the wire "
    "decides";
constexpr const char* kGrpcSlowsPsMore =
    "At 25 Gbps gRPC's CPU time on the host slows ps at every worker count";
constexpr const char* kThirteenXWhateverTheTransport =
    "At every point of this grid RALP reaches 13x over TensorFlow's gRPC exactly where it reaches "
    "it over the ideal wire (AlexNet on the 1 Gbps link)";
constexpr const char* kChecked[] = {
    kGrowsWithWorkers, kThirteenX,    kSmallModels,      kOneWorker,          kBothInRange,
    kVggScales,        kResNetScales, kBoundaryOnly,     kTimeNotTraffic,     kWhoSplits,
    kMarginShrinks,    kCutMoves,     kCompressionHelps, kAllreduceGainsMore, kLossesAgree,
    kWireDecides,      kGrpcSlowsPsMore, kThirteenXWhateverTheTransport};
constexpr const char* kExplanations[] = {
    "The gain is the PS link's: ps moves every parameter through one parameter server's NIC twice "
    "per step, W times",
    "Ring all-reduce sends 2(W-1)/W of the gradients per worker whatever W is",
    "Several parameter servers or the hybrid strategy (the head on the PS, the convolutions "
    "all-reduced) move that limit; this grid does not",
};

// Losses printed to 6 decimals agree when they differ by less than this.
constexpr double kLossAgreement = 1e-6;
// Per message, what a transfer adds to its payload (labels, framing): at most a kilobyte.
constexpr double kMessageExtra = 1024.0;

std::string normalized(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const bool space = c == ' ' || c == '\n' || c == '\t';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  return out;
}

const std::string& page() {
  static const std::string text = [] {
    std::ifstream in(kPage + "/README.md", std::ios::binary);
    return normalized(std::string(std::istreambuf_iterator<char>(in), {}));
  }();
  return text;
}

void expect_page_says(const char* words) {
  EXPECT_NE(page().find(normalized(words)), std::string::npos)
      << "README.md no longer says: " << words;
}

// Records of one or more inputs, with lookups by axis values.
class Data {
 public:
  Data(const std::vector<std::pair<std::string, std::string>>& inputs, const std::string& axis) {
    std::vector<RecordInput> in;
    for (const auto& [label, file] : inputs) in.push_back({label, kData + "/" + file});
    set_ = read_records(in, axis);
  }
  // The records whose axes have these values, in input order.
  [[nodiscard]] std::vector<size_t> where(const std::map<std::string, std::string>& values) const {
    std::vector<size_t> out;
    for (size_t r = 0; r < set_.records.size(); ++r) {
      const bool all = std::all_of(values.begin(), values.end(),
                                   [&](const auto& v) { return text(r, v.first) == v.second; });
      if (all) out.push_back(r);
    }
    return out;
  }
  // The one record with these values' number in `field`.
  [[nodiscard]] double at(const std::map<std::string, std::string>& values,
                          const std::string& field) const {
    const std::vector<size_t> r = where(values);
    if (r.size() != 1) ADD_FAILURE() << r.size() << " records match, expected one";
    return r.empty() ? NAN : number(r[0], field);
  }
  [[nodiscard]] double number(size_t r, const std::string& field) const {
    const auto* v = std::get_if<double>(&set_.records[r][*set_.find(field)]);
    return v != nullptr ? *v : NAN;
  }
  [[nodiscard]] std::string text(size_t r, const std::string& column) const {
    return value_text(set_.records[r][*set_.find(column)]);
  }
  [[nodiscard]] std::vector<std::string> values(const std::string& axis) const {
    return set_.values_of(*set_.find(axis));
  }

 private:
  RecordSet set_;
};

const std::vector<std::string> kSpeedupModels{"vgg16", "alexnet_tf", "resnet50", "inception_v3"};

const Data& speedups() {
  static const Data d = [] {
    std::vector<std::pair<std::string, std::string>> in;
    for (const std::string& m : kSpeedupModels) in.emplace_back(m, "speedup-" + m + "/sweep.json");
    return Data(in, "model");
  }();
  return d;
}

// Worker counts in increasing order as the sweeps list them.
std::vector<std::string> workers_of(const Data& d) { return d.values("workers"); }

TEST(PaperClaims, EveryConditionsSentenceIsCheckedOrAnExplanation) {
  std::vector<std::string> known;
  for (const char* w : kChecked) known.push_back(normalized(w));
  for (const char* w : kExplanations) known.push_back(normalized(w));
  for (const std::string& k : known) {
    EXPECT_NE(page().find(k), std::string::npos) << "README.md no longer says: " << k;
  }
  size_t sentences = 0;
  for (size_t at = page().find("**Conditions.**"); at != std::string::npos;
       at = page().find("**Conditions.**", at + 1)) {
    const size_t end = std::min(page().find(" ## ", at), page().find(" ### ", at));
    std::string paragraph = page().substr(at + 16, end == std::string::npos ? end : end - at - 16);
    for (size_t start = 0; start < paragraph.size();) {
      size_t stop = paragraph.find(". ", start);
      if (stop == std::string::npos) stop = paragraph.size();
      const std::string sentence = paragraph.substr(start, stop - start);
      const bool covered = std::any_of(known.begin(), known.end(), [&](const std::string& k) {
        return sentence.find(k) != std::string::npos;
      });
      EXPECT_TRUE(covered) << "a Conditions sentence neither checked here nor listed as an "
                              "explanation: "
                           << sentence;
      ++sentences;
      start = stop + 2;
    }
  }
  // Six claims and claim 1's transport question, 19 sentences in their Conditions paragraphs
  // (5, 3, 4, 2, 2, 2, 1).
  EXPECT_EQ(sentences, 19u);
}

TEST(PaperClaims, SetupIsTheInputs) {
  expect_page_says(kSetup);
  for (const char* input :
       {"vgg16", "alexnet_tf", "resnet50", "inception_v3", "compression-none", "compression-fp16",
        "compression-int8", "compression-topk", "fc-head", "verdict"}) {
    const Json s = read_json_file(kPage + "/inputs/" + input + ".json");
    EXPECT_EQ(s.at("batch_per_worker"), 32) << input;
    EXPECT_EQ(s.at("cluster").at("parameter_servers"), 1) << input;
    EXPECT_EQ(s.at("cluster").at("worker_device"), "gtx1080ti") << input;
    EXPECT_EQ(s.at("cluster").at("platform").at("kind"), "star") << input;
    EXPECT_EQ(s.at("cluster").at("platform").at("latency"), "50us") << input;
    EXPECT_EQ(s.at("network_model"), "tcp") << input;
  }
  EXPECT_EQ(speedups().values("device"), (std::vector<std::string>{"gtx1080ti", "v100"}));
}

TEST(PaperClaims, AutoCutIsOftenBeforeTheFirstFcLayer) {
  // "Often": at least one point in three of each FC-heavy model.
  expect_page_says(kAutoCut);
  for (const char* model : {"vgg16", "alexnet_tf"}) {
    const LayerGraph graph = *zoo_model(model);
    size_t first_fc = graph.layers().size();
    for (size_t i = 0; i < graph.layers().size(); ++i) {
      if (graph.layers()[i].kind() == LayerKind::fully_connected) {
        first_fc = std::min(first_fc, i);
      }
    }
    const std::vector<size_t> points = speedups().where({{"model", model}, {"kind", "ralp"}});
    const auto before = std::count_if(points.begin(), points.end(), [&](size_t r) {
      return *graph.find(speedups().text(r, "cut")) < first_fc;
    });
    EXPECT_GE(3 * static_cast<size_t>(before), points.size()) << model;
  }
}

TEST(PaperClaims, FcHeavySpeedupGrowsWithWorkersAndFallsWithBandwidth) {
  expect_page_says(kGrowsWithWorkers);
  const std::vector<std::string> bandwidths{"1Gbps", "10Gbps", "25Gbps"};
  for (const char* model : {"vgg16", "alexnet_tf"}) {
    for (const std::string& device : speedups().values("device")) {
      for (const std::string& bw : bandwidths) {
        double before = 0.0;
        for (const std::string& w : workers_of(speedups())) {
          const double s = speedups().at({{"model", model},
                                          {"device", device},
                                          {"bandwidth", bw},
                                          {"workers", w},
                                          {"kind", "ralp"}},
                                         "speedup_vs_ps");
          EXPECT_GT(s, before) << model << " " << device << " " << bw << " " << w;
          before = s;
        }
      }
      for (const std::string& w : workers_of(speedups())) {
        double before = INFINITY;
        for (const std::string& bw : bandwidths) {
          const double s = speedups().at({{"model", model},
                                          {"device", device},
                                          {"bandwidth", bw},
                                          {"workers", w},
                                          {"kind", "ralp"}},
                                         "speedup_vs_ps");
          EXPECT_LT(s, before) << model << " " << device << " " << bw << " " << w;
          before = s;
        }
      }
    }
  }
}

// Whether any of ralp's points of a model at a bandwidth (both devices) is at least `x` over ps,
// and the worker counts of those that are.
std::set<std::string> workers_reaching(const std::string& model, const std::string& bw, double x) {
  std::set<std::string> out;
  for (const size_t r : speedups().where({{"model", model}, {"bandwidth", bw}, {"kind", "ralp"}})) {
    if (speedups().number(r, "speedup_vs_ps") >= x) out.insert(speedups().text(r, "workers"));
  }
  return out;
}

TEST(PaperClaims, ThirteenXOnlyForVggOnTheSlowerLinksAndAlexNetOnEvery) {
  expect_page_says(kThirteenX);
  for (const std::string& device : speedups().values("device")) {
    for (const std::string& bw : speedups().values("bandwidth")) {
      const auto reaches = [&](const char* model) {
        const std::vector<size_t> points = speedups().where(
            {{"model", model}, {"device", device}, {"bandwidth", bw}, {"kind", "ralp"}});
        return std::any_of(points.begin(), points.end(),
                           [](size_t r) { return speedups().number(r, "speedup_vs_ps") >= 13.0; });
      };
      EXPECT_EQ(reaches("vgg16"), bw == "1Gbps" || bw == "10Gbps") << device << " " << bw;
      EXPECT_TRUE(reaches("alexnet_tf")) << device << " " << bw;
      EXPECT_FALSE(reaches("resnet50")) << device << " " << bw;
      EXPECT_FALSE(reaches("inception_v3")) << device << " " << bw;
    }
  }
}

TEST(PaperClaims, SmallModelsReach2_3xOnTheSlowestLinkElsewhereAtOneWorkerAtMost) {
  expect_page_says(kSmallModels);
  for (const char* model : {"resnet50", "inception_v3"}) {
    EXPECT_FALSE(workers_reaching(model, "1Gbps", 2.3).empty()) << model;
    for (const char* bw : {"10Gbps", "25Gbps"}) {
      for (const std::string& w : workers_reaching(model, bw, 2.3)) {
        EXPECT_EQ(w, "1") << model << " " << bw;
      }
    }
  }
}

TEST(PaperClaims, EvenOneWorkerGains) {
  expect_page_says(kOneWorker);
  for (const size_t r : speedups().where({{"workers", "1"}, {"kind", "ralp"}})) {
    EXPECT_GT(speedups().number(r, "speedup_vs_ps"), 1.0) << speedups().text(r, "model");
  }
}

TEST(PaperClaims, BothThePapersAndThePagesFiguresAreInRange) {
  expect_page_says(kBothInRange);
  double low = INFINITY;
  double high = 0.0;
  for (const size_t r : speedups().where({{"kind", "ralp"}})) {
    low = std::min(low, speedups().number(r, "speedup_vs_ps"));
    high = std::max(high, speedups().number(r, "speedup_vs_ps"));
  }
  EXPECT_LE(low, 2.3);
  EXPECT_GE(high, 13.0);
}

// RALP over ps for VGG-16 and AlexNet with a host-CPU PS, over the ideal wire and over
// TensorFlow's gRPC.
const std::vector<std::string> kTransportModels{"vgg16", "alexnet_tf"};
const Data& transports() {
  static const Data d({{"vgg16", "transport-vgg16/sweep.json"},
                       {"alexnet_tf", "transport-alexnet_tf/sweep.json"}},
                      "model");
  return d;
}
double over_transport(const std::string& model, const std::string& transport,
                      const std::string& bw, const std::string& w) {
  return transports().at({{"model", model}, {"transport", transport}, {"bandwidth", bw},
                          {"workers", w}, {"kind", "ralp"}},
                         "speedup_vs_ps");
}

TEST(PaperClaims, OnTheSlowLinkTheWireDecides) {
  expect_page_says(kWireDecides);
  ASSERT_FALSE(workers_of(transports()).empty());
  for (const std::string& m : kTransportModels) {
    for (const std::string& w : workers_of(transports())) {
      const double ratio =
          over_transport(m, "tf-grpc", "1Gbps", w) / over_transport(m, "ideal", "1Gbps", w);
      EXPECT_LT(std::abs(ratio - 1.0), 0.05) << m << ", " << w << " workers";
    }
  }
}

TEST(PaperClaims, AtTwentyFiveGbpsGrpcSlowsPs) {
  expect_page_says(kGrpcSlowsPsMore);
  for (const std::string& m : kTransportModels) {
    for (const std::string& w : workers_of(transports())) {
      const auto ps_step = [&](const std::string& t) {
        return transports().at({{"model", m}, {"transport", t}, {"bandwidth", "25Gbps"},
                                {"workers", w}, {"kind", "ps"}},
                               "step_time_mean_s");
      };
      EXPECT_GT(ps_step("tf-grpc"), ps_step("ideal")) << m << ", " << w << " workers";
    }
  }
}

TEST(PaperClaims, ThirteenXIsReachedOverGrpcExactlyWhereOverTheIdealWire) {
  expect_page_says(kThirteenXWhateverTheTransport);
  size_t points = 0;
  for (const std::string& m : kTransportModels) {
    for (const std::string& bw : transports().values("bandwidth")) {
      for (const std::string& w : workers_of(transports())) {
        const bool ideal = over_transport(m, "ideal", bw, w) >= 13.0;
        EXPECT_EQ(over_transport(m, "tf-grpc", bw, w) >= 13.0, ideal) << m << " " << bw << " " << w;
        EXPECT_EQ(ideal, m == "alexnet_tf" && bw == "1Gbps") << m << " " << bw << " " << w;
        ++points;
      }
    }
  }
  EXPECT_EQ(points, 18u);  // 2 models x 3 links x 3 worker counts
}

const Data& scaling() {
  static const Data d(
      {{"vgg16", "scaling-vgg16/sweep.json"}, {"resnet50", "scaling-resnet50/sweep.json"}},
      "model");
  return d;
}

TEST(PaperClaims, VggBeatsAllreduceOnlyBelowTheLargestWorkerCounts) {
  // Faster somewhere at every bandwidth, slower at the two largest worker counts.
  expect_page_says(kVggScales);
  const std::vector<std::string> workers = workers_of(scaling());
  for (const std::string& bw : scaling().values("bandwidth")) {
    bool faster_somewhere = false;
    for (const std::string& w : workers) {
      const double x =
          scaling().at({{"model", "vgg16"}, {"bandwidth", bw}, {"workers", w}, {"kind", "ralp"}},
                       "speedup_vs_allreduce");
      faster_somewhere = faster_somewhere || x > 1.0;
      if (w == workers.back() || w == workers[workers.size() - 2]) {
        EXPECT_LT(x, 1.0) << bw << " " << w;
      }
    }
    EXPECT_TRUE(faster_somewhere) << bw;
  }
}

TEST(PaperClaims, ResNetIsSlowerThanAllreduceEverywhere) {
  expect_page_says(kResNetScales);
  for (const size_t r : scaling().where({{"model", "resnet50"}, {"kind", "ralp"}})) {
    EXPECT_LT(scaling().number(r, "speedup_vs_allreduce"), 1.0);
  }
}

const Data& traffic() {
  static const Data d({{"traffic", "fc-head-traffic.tsv"}}, "file");
  return d;
}

TEST(PaperClaims, RalpSendsTheBoundaryWhateverTheHeadsWidth) {
  // 8 workers, batch 32, fc6's input 25,088 floats of 4 bytes: 3,211,264 bytes per worker; VGG-16's
  // 13 convolutions hold 138,357,544 - 123,642,856 (fc6..fc8 at width 4096) = 14,714,688
  // parameters, 58,858,752 bytes, which ralp@fc6 pushes and hybrid@fc6 all-reduces.
  expect_page_says(kBoundaryOnly);
  constexpr double kWorkers = 8.0;
  constexpr double kBoundary = 32.0 * 25088.0 * 4.0;
  constexpr double kConvolutions = 14714688.0 * 4.0;
  const std::vector<std::string> widths = traffic().values("width");
  ASSERT_GE(widths.size(), 2u);
  for (const std::string& w : widths) {
    const double hybrid = traffic().at({{"width", w}, {"strategy", "hybrid@fc6"}}, "ps0_in");
    const double ralp = traffic().at({{"width", w}, {"strategy", "ralp@fc6"}}, "ps0_in");
    EXPECT_EQ(hybrid, traffic().at({{"width", widths[0]}, {"strategy", "hybrid@fc6"}}, "ps0_in"));
    EXPECT_EQ(ralp, traffic().at({{"width", widths[0]}, {"strategy", "ralp@fc6"}}, "ps0_in"));
    EXPECT_EQ(traffic().at({{"width", w}, {"strategy", "ralp@fc6"}}, "worker0_out"),
              traffic().at({{"width", widths[0]}, {"strategy", "ralp@fc6"}}, "worker0_out"));
    EXPECT_NEAR(hybrid, kWorkers * kBoundary, kWorkers * kMessageExtra) << w;
    EXPECT_NEAR(ralp - hybrid, kWorkers * kConvolutions, kWorkers * kMessageExtra) << w;
  }
}

TEST(PaperClaims, AWideHeadCostsPsTrafficAndRalpOnlyTime) {
  expect_page_says(kTimeNotTraffic);
  const std::vector<std::string> widths = traffic().values("width");
  double before = 0.0;
  for (const std::string& w : widths) {
    const double ps = traffic().at({{"width", w}, {"strategy", "ps"}}, "ps0_in");
    EXPECT_GT(ps, before) << w;
    before = ps;
  }
  EXPECT_GT(traffic().at({{"width", widths.back()}, {"strategy", "ralp@fc6"}}, "step_s"),
            traffic().at({{"width", widths.front()}, {"strategy", "ralp@fc6"}}, "step_s"));
}

const Data& verdicts() {
  static const Data d({{"verdict", "verdict.tsv"}}, "file");
  return d;
}

const std::set<std::string> kSplitters{"alexnet", "alexnet_tf", "vgg11",
                                       "vgg16",   "vgg19",      "cifar_alexnet"};

TEST(PaperClaims, FcHeavyModelsSplitTheOthersLoseToAllreduce) {
  expect_page_says(kWhoSplits);
  const std::vector<std::string> models = verdicts().values("model");
  EXPECT_EQ(models.size(), zoo_entries().size());  // every zoo model
  for (size_t r = 0; r < models.size() * verdicts().values("bandwidth").size(); ++r) {
    const std::string model = verdicts().text(r, "model");
    if (kSplitters.count(model) > 0) {
      EXPECT_EQ(verdicts().text(r, "split"), "split") << model;
    } else {
      EXPECT_EQ(verdicts().text(r, "split"), "do not split") << model;
      EXPECT_EQ(verdicts().text(r, "best_uncut"), "allreduce") << model;
      EXPECT_LT(verdicts().number(r, "gain"), 0.0) << model;
    }
  }
}

TEST(PaperClaims, SplittersMarginShrinksAndCutStaysOrMovesLater) {
  expect_page_says(kMarginShrinks);
  expect_page_says(kCutMoves);
  for (const std::string& model : kSplitters) {
    const LayerGraph graph = *zoo_model(model);
    const auto row = [&](const char* bw) {
      return verdicts().where({{"model", model}, {"bandwidth", bw}});
    };
    ASSERT_EQ(row("1Gbps").size(), 1u) << model;
    ASSERT_EQ(row("10Gbps").size(), 1u) << model;
    const size_t slow = row("1Gbps")[0];
    const size_t fast = row("10Gbps")[0];
    if (model == "vgg11") {
      EXPECT_NEAR(verdicts().number(fast, "gain"), verdicts().number(slow, "gain"), 0.02);
    } else {
      EXPECT_LT(verdicts().number(fast, "gain"), verdicts().number(slow, "gain")) << model;
    }
    EXPECT_GE(*graph.find(verdicts().text(fast, "ralp_cut")),
              *graph.find(verdicts().text(slow, "ralp_cut")))
        << model;
  }
}

const Data& compression() {
  static const Data d({{"none", "compression-none/sweep.json"},
                       {"fp16", "compression-fp16/sweep.json"},
                       {"int8", "compression-int8/sweep.json"},
                       {"topk", "compression-topk/sweep.json"}},
                      "compression");
  return d;
}

// A strategy's images/s with a compression over its images/s without, at each point: (workers,
// ratio).
std::vector<std::pair<double, double>> gains(const std::string& c, const std::string& kind) {
  std::vector<std::pair<double, double>> out;
  for (const size_t r : compression().where({{"compression", c}, {"kind", kind}})) {
    const double none = compression().at({{"compression", "none"},
                                          {"kind", kind},
                                          {"bandwidth", compression().text(r, "bandwidth")},
                                          {"workers", compression().text(r, "workers")}},
                                         "images_per_s");
    out.emplace_back(compression().number(r, "workers"),
                     compression().number(r, "images_per_s") / none);
  }
  return out;
}

double largest(const std::vector<std::pair<double, double>>& g) {
  double out = 0.0;
  for (const auto& [w, x] : g) out = std::max(out, x);
  return out;
}

TEST(PaperClaims, CompressionSpeedsRalpWithManyWorkersMostWithInt8AndTopk) {
  // The largest gain of each compression is over 10%, at 16 workers or more; int8's and top-k's
  // exceed fp16's. At 1 and 2 workers every gain is within 10%, and some are losses.
  expect_page_says(kCompressionHelps);
  bool some_loss = false;
  for (const char* c : {"fp16", "int8", "topk"}) {
    const auto g = gains(c, "ralp");
    const auto best = std::max_element(
        g.begin(), g.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    EXPECT_GT(best->second, 1.1) << c;
    EXPECT_GE(best->first, 16.0) << c;
    for (const auto& [w, x] : g) {
      if (w > 2.0) continue;
      EXPECT_NEAR(x, 1.0, 0.1) << c << " at " << w << " workers";
      some_loss = some_loss || x < 1.0;
    }
  }
  EXPECT_TRUE(some_loss);
  EXPECT_GT(largest(gains("int8", "ralp")), largest(gains("fp16", "ralp")));
  EXPECT_GT(largest(gains("topk", "ralp")), largest(gains("fp16", "ralp")));
}

TEST(PaperClaims, AllreduceGainsMoreAndRalpsLeadShrinks) {
  expect_page_says(kAllreduceGainsMore);
  for (const char* c : {"fp16", "int8", "topk"}) {
    EXPECT_GT(largest(gains(c, "allreduce")), largest(gains(c, "ralp"))) << c;
    for (const size_t r : compression().where({{"compression", "none"}, {"kind", "ralp"}})) {
      const double lead = compression().number(r, "speedup_vs_allreduce");
      if (lead <= 1.0) continue;
      const double with = compression().at({{"compression", c},
                                            {"kind", "ralp"},
                                            {"bandwidth", compression().text(r, "bandwidth")},
                                            {"workers", compression().text(r, "workers")}},
                                           "speedup_vs_allreduce");
      EXPECT_LT(with, lead) << c << " " << compression().text(r, "bandwidth") << " "
                            << compression().text(r, "workers");
    }
  }
}

TEST(PaperClaims, LossesAgreeStepByStep) {
  expect_page_says(kLossesAgree);
  const Data losses({{"losses", "cluster-losses.tsv"}}, "file");
  for (const std::string& scenario : losses.values("scenario")) {
    const std::vector<size_t> records = losses.where({{"scenario", scenario}});
    std::set<std::string> strategies;
    for (const size_t r : records) strategies.insert(losses.text(r, "strategy"));
    EXPECT_EQ(strategies.size(), 4u) << scenario;  // ps, ralp, allreduce, hybrid
    EXPECT_EQ(records.size(), strategies.size() * losses.values("step").size()) << scenario;
    for (const size_t r : records) {
      const double ps = losses.at(
          {{"scenario", scenario}, {"strategy", "ps"}, {"step", losses.text(r, "step")}}, "loss");
      EXPECT_NEAR(losses.number(r, "loss"), ps, kLossAgreement)
          << scenario << " " << losses.text(r, "strategy") << " step " << losses.text(r, "step");
    }
  }
}

}  // namespace
}  // namespace ralp::reports
