// Reading results, errors, summaries, failure messages, the link fit and profile checks.
#include <gtest/gtest.h>

#include <tuple>

#include "ralp/validate/comparison.hpp"
#include "ralp/validate/link_fit.hpp"
#include "ralp/validate/validate_run.hpp"

namespace ralp::validate {
namespace {

Json result(double step, double ps_in) {
  return {{"step_time_median_s", step},
          {"step_time_spread_s", 0.002},
          {"worker_mean", {{"compute_s", 0.03}, {"communication_s", 0.01}, {"waiting_s", 0.005}}},
          {"ps_busy_s", 0.004},
          {"hosts", {{{"name", "ps-0"}, {"bytes_in", ps_in}, {"bytes_out", 2.0}},
                     {{"name", "worker-0"}, {"bytes_in", 3.0}, {"bytes_out", 4.0}}}}};
}

TEST(Comparison, ReadsEachQuantity) {
  const Json r = result(0.05, 1e6);
  EXPECT_DOUBLE_EQ(measured_step_time_s(r, "m.json"), 0.05);
  EXPECT_DOUBLE_EQ(measured_step_spread_s(r, "m.json"), 0.002);
  EXPECT_DOUBLE_EQ(predicted_step_time_s(r, "p.json"), 0.05);
  EXPECT_EQ(worker_split(r, "m.json"), (RoleSplit{0.03, 0.01, 0.005}));
  EXPECT_DOUBLE_EQ(ps_busy_s(r, "m.json"), 0.004);
  EXPECT_EQ(host_bytes(r, "ps-0", "m.json"), (HostBytes{1e6, 2.0}));
  EXPECT_EQ(host_bytes(r, "ps-1", "m.json"), (HostBytes{}));  // absent: nothing moved
  const Json doc = {{"results", Json::array({r})}};
  EXPECT_EQ(&only_result(doc, "m.json"), &doc["results"][0]);
}

TEST(Comparison, MissingFieldNamesFileAndPath) {
  Json r = result(0.05, 1.0);
  r["worker_mean"].erase("waiting_s");
  try {
    worker_split(r, "m.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "m.json");
    EXPECT_EQ(e.path(), "/worker_mean/waiting_s");
  }
  EXPECT_THROW(only_result(Json{{"results", Json::array()}}, "m.json"), InputError);
}

PointComparison point(const std::string& kind, double measured, double predicted) {
  PointComparison p{.kind = kind};
  p.measured.step_time_s = measured;
  p.predicted.step_time_s = predicted;
  return p;
}

TEST(Comparison, ErrorsAndSummary) {
  // Errors: ps +2%, -4%, +1%; allreduce -10%, +6%.
  const std::vector<PointComparison> points = {
      point("ps", 0.100, 0.102), point("ps", 0.050, 0.048), point("allreduce", 0.200, 0.180),
      point("ps", 1.000, 1.010), point("allreduce", 0.100, 0.106)};
  EXPECT_NEAR(points[2].error_pct(), -10.0, 1e-9);
  const auto s = summarise(points);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].group, "ps");
  EXPECT_EQ(s[0].points, 3u);
  EXPECT_NEAR(s[0].median_abs_error_pct, 2.0, 1e-9);  // of 2, 4, 1
  EXPECT_NEAR(s[0].max_abs_error_pct, 4.0, 1e-9);
  EXPECT_EQ(s[1].group, "allreduce");
  EXPECT_NEAR(s[1].median_abs_error_pct, 8.0, 1e-9);  // of 10 and 6
  EXPECT_EQ(s[2].group, "all");
  EXPECT_NEAR(s[2].median_abs_error_pct, 4.0, 1e-9);  // of 1, 2, 4, 6, 10
  EXPECT_NEAR(s[2].max_abs_error_pct, 10.0, 1e-9);
  EXPECT_FALSE(meets_target(s[2]));
  EXPECT_TRUE(meets_target({.group = "all", .points = 2, .median_abs_error_pct = 3.0,
                            .max_abs_error_pct = 8.0}));
}

TEST(Comparison, TheMachineResolvesTheTargetWhenItsPassesAgreeWithinIt) {
  EXPECT_FALSE(machine_resolves_target({}).has_value());  // one pass
  // Spreads between passes: ps 2% and 9%, allreduce 1%.
  std::vector<PointComparison> points = {point("ps", 0.100, 0.100), point("ps", 0.100, 0.100),
                                         point("allreduce", 0.100, 0.100)};
  const auto passes = [&](size_t i, double a, double b) {
    points[i].pass_step_times_s = {a, b};
  };
  passes(0, 0.099, 0.101);
  passes(1, 0.0955, 0.1045);
  passes(2, 0.0995, 0.1005);
  EXPECT_EQ(machine_resolves_target(summarise(points, &PointComparison::pass_spread_pct)), false);
  passes(1, 0.097, 0.103);  // 6%: the max within 8%, the median (2%) within 3%
  EXPECT_EQ(machine_resolves_target(summarise(points, &PointComparison::pass_spread_pct)), true);
  passes(0, 0.098, 0.102);  // 4%, 6%, 1%: the median beyond 3%
  EXPECT_EQ(machine_resolves_target(summarise(points, &PointComparison::pass_spread_pct)), false);
}

TEST(Comparison, ReplayedErrorsHaveTheirOwnSummary) {
  std::vector<PointComparison> points = {point("ps", 0.100, 0.102), point("ps", 0.050, 0.048),
                                         point("allreduce", 0.200, 0.180)};
  points[0].replayed.step_time_s = 0.101;  // +1%
  points[1].replayed.step_time_s = 0.0485;  // -3%
  points[2].replayed.step_time_s = 0.204;  // +2%
  EXPECT_NEAR(points[1].replay_error_pct(), -3.0, 1e-9);
  EXPECT_NEAR(points[1].error_pct(), -4.0, 1e-9);
  const auto s = summarise(points, &PointComparison::replay_error_pct);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_NEAR(s[0].median_abs_error_pct, 2.0, 1e-9);  // of 1 and 3
  EXPECT_NEAR(s[1].max_abs_error_pct, 2.0, 1e-9);
  EXPECT_NEAR(s[2].median_abs_error_pct, 2.0, 1e-9);  // of 1, 2, 3
  EXPECT_NEAR(s[2].max_abs_error_pct, 3.0, 1e-9);
  EXPECT_NEAR(summarise(points)[2].max_abs_error_pct, 10.0, 1e-9);  // the prediction's
}

TEST(Comparison, StealGoesIntoTheJsonOnlyWhereMeasured) {
  PointComparison p = point("ps", 0.100, 0.102);
  EXPECT_TRUE(to_json(p).at("steal_pct").is_null());
  p.steal_pct = 12.5;
  EXPECT_DOUBLE_EQ(to_json(p).at("steal_pct").get<double>(), 12.5);
}

TEST(Comparison, PassesCombineIntoTheirMeansAndTheirSpread) {
  PointComparison a = point("ps", 0.100, 0.090);
  a.id = "n_ps_1gbit_2-node";
  a.measured.ps0.in = 4.0;
  a.replayed.step_time_s = 0.096;
  a.steal_pct = 10.0;
  PointComparison b = a;
  b.measured.step_time_s = 0.080;
  b.predicted.step_time_s = 0.094;  // a profile measured between the passes
  b.measured.ps0.in = 2.0;
  b.replayed.step_time_s = 0.084;
  b.steal_pct = 0.0;
  EXPECT_DOUBLE_EQ(a.pass_spread_pct(), 0.0);  // one pass
  const PointComparison c = combine_passes({a, b});
  EXPECT_DOUBLE_EQ(c.measured.step_time_s, 0.090);
  EXPECT_DOUBLE_EQ(c.measured.ps0.in, 3.0);
  EXPECT_DOUBLE_EQ(c.replayed.step_time_s, 0.090);
  EXPECT_DOUBLE_EQ(c.predicted.step_time_s, 0.092);
  EXPECT_EQ(c.pass_predicted_step_times_s, (std::vector<double>{0.090, 0.094}));
  EXPECT_NEAR(c.error_pct(), 0.002 / 0.090 * 100.0, 1e-9);
  EXPECT_DOUBLE_EQ(*c.steal_pct, 5.0);
  EXPECT_EQ(c.pass_step_times_s, (std::vector<double>{0.100, 0.080}));
  EXPECT_NEAR(c.pass_spread_pct(), 0.020 / 0.090 * 100.0, 1e-9);
  EXPECT_NEAR(to_json(c).at("pass_spread_pct").get<double>(), 22.222, 1e-3);
  EXPECT_TRUE(to_json(a).at("pass_spread_pct").is_null());
  // Steal is known only where every pass measured it.
  b.steal_pct.reset();
  EXPECT_FALSE(combine_passes({a, b}).steal_pct);
  // One pass is the point itself; passes of two points, or none, are a mistake.
  EXPECT_TRUE(combine_passes({a}).pass_step_times_s.empty());
  b.id = "n_ps_100mbit_2-node";
  EXPECT_THROW(combine_passes({a, b}), std::invalid_argument);
  EXPECT_THROW(combine_passes({}), std::invalid_argument);
  // The spread between passes summarises as the errors do.
  const auto s = summarise({c}, &PointComparison::pass_spread_pct);
  EXPECT_NEAR(s.back().max_abs_error_pct, 22.222, 1e-3);
}

TEST(Comparison, ReadsEachHostsCompute) {
  Json r = result(0.05, 1.0);
  r["hosts"][0]["split"] = {{"compute_s", 0.004}, {"communication_s", 0.0}, {"waiting_s", 0.0}};
  r["hosts"][1]["split"] = {{"compute_s", 0.02}, {"communication_s", 0.0}, {"waiting_s", 0.0}};
  EXPECT_EQ(host_computes(r, "m.json"),
            (std::vector<HostCompute>{{"ps-0", 0.004}, {"worker-0", 0.02}}));
  EXPECT_EQ(measured_figures(r, "m.json").hosts.size(), 2u);
  r["hosts"][1]["split"].erase("compute_s");
  try {
    host_computes(r, "m.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "m.json");
    EXPECT_EQ(e.path(), "/hosts/1/split/compute_s");
  }
}

// A pinned point whose hosts computed `measured` s of a `step` s step, `predicted` s in the
// prediction and `replayed` s in the replay.
PointComparison computed(
    double step, const std::vector<std::tuple<std::string, double, double, double>>& hosts) {
  PointComparison p = point("ralp", step, step);
  p.pinned = true;
  for (const auto& [name, measured, predicted, replayed] : hosts) {
    p.measured.hosts.push_back({name, measured});
    p.predicted.hosts.push_back({name, predicted});
    p.replayed.hosts.push_back({name, replayed});
  }
  return p;
}

TEST(Comparison, KernelSpeedIsTheReplayOverThePredictionByHowBusyTheCoreWas) {
  std::vector<PointComparison> points = {
      // Busy 90% and 50%: kernels as the profile, and 1.2 times its time.
      computed(0.100, {{"worker-0", 0.090, 0.090, 0.090}, {"ps-0", 0.050, 0.040, 0.048}}),
      // Busy 5%: 1.5 times; ps-0 computed under the threshold and is left out.
      computed(1.000, {{"worker-0", 0.050, 0.030, 0.045}, {"ps-0", 0.0005, 0.0004, 0.0008}}),
      // Busy 80%: 0.9 times.
      computed(0.050, {{"worker-0", 0.040, 0.040, 0.036}})};
  // A point whose ranks shared cores says nothing about one core's speed.
  PointComparison shared = computed(0.100, {{"worker-0", 0.050, 0.010, 0.030}});
  shared.pinned = false;
  points.push_back(shared);
  const std::vector<KernelSpeedBin> bins = kernel_speed(points);
  ASSERT_EQ(bins.size(), 3u);
  EXPECT_DOUBLE_EQ(bins[0].busy_from, 0.75);  // busiest first
  EXPECT_DOUBLE_EQ(bins[0].busy_to, 1.0);
  EXPECT_EQ(bins[0].hosts, 2u);
  EXPECT_NEAR(bins[0].median_ratio, 0.95, 1e-12);  // of 1.0 and 0.9
  EXPECT_NEAR(bins[0].min_ratio, 0.9, 1e-12);
  EXPECT_NEAR(bins[0].max_ratio, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(bins[1].busy_from, 0.4);
  EXPECT_DOUBLE_EQ(bins[1].busy_to, 0.75);
  EXPECT_NEAR(bins[1].median_ratio, 1.2, 1e-12);
  EXPECT_DOUBLE_EQ(bins[2].busy_from, 0.0);  // no host was 10-40% busy
  EXPECT_EQ(bins[2].hosts, 1u);
  EXPECT_NEAR(bins[2].median_ratio, 1.5, 1e-12);
  EXPECT_EQ(to_json(bins[2]).at("hosts").get<size_t>(), 1u);
  EXPECT_TRUE(kernel_speed({shared}).empty());
  // Each point's ranks, as the points table gives them: ps-0 under the threshold left out.
  const std::vector<RankKernelSpeed> ranks = points[1].kernel_speeds();
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_EQ(ranks[0].host, "worker-0");
  EXPECT_NEAR(ranks[0].busy_share, 0.05, 1e-12);
  EXPECT_NEAR(ranks[0].ratio, 1.5, 1e-12);
  EXPECT_NEAR(to_json(points[1]).at("kernel_speeds").at(0).at("ratio").get<double>(), 1.5, 1e-12);
  EXPECT_TRUE(shared.kernel_speeds().empty());
  EXPECT_TRUE(to_json(shared).at("kernel_speeds").empty());
}

TEST(Comparison, PassesAverageEachHostsCompute) {
  PointComparison a = computed(0.100, {{"ps-0", 0.010, 0.008, 0.012}});
  PointComparison b = computed(0.100, {{"ps-0", 0.020, 0.008, 0.016}});
  const PointComparison c = combine_passes({a, b});
  EXPECT_EQ(c.measured.hosts, (std::vector<HostCompute>{{"ps-0", 0.015}}));
  EXPECT_NEAR(c.replayed.hosts.at(0).compute_s, 0.014, 1e-12);
  EXPECT_EQ(to_json(c).at("measured").at("hosts").at(0).at("name"), "ps-0");
}

TEST(LinkFit, RecoversGoodputAndFixedCost) {
  // 10 MB/s goodput, rtt 100 us, transfers a + S / g with a = 300 us: fixed cost 250 us one way.
  LinkProbe probe{.rtt_s = 100e-6};
  for (const double bytes : {1e5, 1e6, 4e6}) probe.transfers.push_back({bytes, 300e-6 + bytes / 1e7});
  const NetworkFit fit = fit_network(probe, 1.25e7);  // a 100 Mbit/s tbf rate
  EXPECT_NEAR(fit.goodput_bytes_per_s, 1e7, 1e-3);
  EXPECT_NEAR(fit.bandwidth_factor, 0.8, 1e-9);
  EXPECT_NEAR(fit.latency_s, 50e-6, 1e-15);
  EXPECT_NEAR(fit.fixed_cost_s, 250e-6, 1e-12);
  EXPECT_NEAR(fit.latency_factor, 2.5, 1e-6);  // 250 us over two 50 us links
  EXPECT_NEAR(fit.residual_max, 0.0, 1e-9);
}

TEST(LinkFit, FixedCostIsAtLeastHalfTheRoundTrip) {
  LinkProbe probe{.rtt_s = 400e-6};
  for (const double bytes : {1e5, 1e6}) probe.transfers.push_back({bytes, 100e-6 + bytes / 1e7});
  const NetworkFit fit = fit_network(probe, 1.25e7);
  EXPECT_NEAR(fit.fixed_cost_s, 200e-6, 1e-12);
  EXPECT_NEAR(fit.latency_factor, 0.5, 1e-9);
}

TEST(LinkFit, RejectsTooFewSizesAndFlatTimes) {
  LinkProbe one{.rtt_s = 1e-4, .transfers = {{1e6, 0.1}}};
  EXPECT_THROW(fit_network(one, 1e7), std::runtime_error);
  LinkProbe flat{.rtt_s = 1e-4, .transfers = {{1e5, 0.1}, {1e6, 0.1}}};
  EXPECT_THROW(fit_network(flat, 1e7), std::runtime_error);
}

TEST(LinkFit, ParsesTheProbeAndCountsTheHeader) {
  const Json j = {{"rtt_median_s", 1e-4}, {"rtt_min_s", 9e-5},
                  {"transfers", {{{"bytes", 1000}, {"seconds", 0.001}}}}};
  const LinkProbe p = parse_link_probe(j, "probe.json");
  EXPECT_DOUBLE_EQ(p.rtt_s, 1e-4);
  EXPECT_DOUBLE_EQ(p.transfers.at(0).bytes, 1024.0);
  EXPECT_THROW(parse_link_probe(Json{{"rtt_median_s", 1e-4}}, "probe.json"), InputError);
}

TEST(LinkFit, MessageCpuIsTheCpuSeriesLinePerMessageAndPerByteNeverNegative) {
  // The sender loses 100 us + 0.5 ns per byte, the receiver 0.2 ns per byte: both lines come
  // back. A series whose losses fall with size (noise) fits no cost per byte and a weighted mean
  // per message; one whose line crosses 0 above the smallest size fits no cost per message and a
  // line through the origin. Without a series all are 0.
  LinkProbe probe{.rtt_s = 100e-6};
  for (const double bytes : {1e5, 1e6, 4e6}) {
    probe.transfers.push_back({bytes, 300e-6 + bytes / 1e7});
    probe.cpu.push_back({bytes, 100e-6 + 0.5e-9 * bytes, 0.2e-9 * bytes});
  }
  const NetworkFit fit = fit_network(probe, 1.25e7);
  EXPECT_NEAR(fit.send_cpu_s_per_byte, 0.5e-9, 1e-18);
  EXPECT_NEAR(fit.send_cpu_s_per_message, 100e-6, 1e-12);
  EXPECT_NEAR(fit.receive_cpu_s_per_byte, 0.2e-9, 1e-18);
  EXPECT_NEAR(fit.receive_cpu_s_per_message, 0.0, 1e-12);
  EXPECT_NEAR(to_json(fit).at("send_cpu_ns_per_byte").get<double>(), 0.5, 1e-9);
  EXPECT_NEAR(to_json(fit).at("send_cpu_us_per_message").get<double>(), 100.0, 1e-6);
  for (auto& c : probe.cpu) c.receiver_s = 1e-3 - 1e-10 * c.bytes;  // 0.99, 0.9, 0.6 ms
  const NetworkFit falling = fit_network(probe, 1.25e7);
  EXPECT_EQ(falling.receive_cpu_s_per_byte, 0.0);
  EXPECT_GT(falling.receive_cpu_s_per_message, 0.6e-3);
  EXPECT_LT(falling.receive_cpu_s_per_message, 0.99e-3);
  for (auto& c : probe.cpu) c.sender_s = -50e-6 + 1e-9 * c.bytes;  // 50 us, 950 us, 3.95 ms
  const NetworkFit crossing = fit_network(probe, 1.25e7);
  EXPECT_EQ(crossing.send_cpu_s_per_message, 0.0);
  EXPECT_GT(crossing.send_cpu_s_per_byte, 0.4e-9);
  EXPECT_LT(crossing.send_cpu_s_per_byte, 1e-9);
  probe.cpu.clear();
  const NetworkFit none = fit_network(probe, 1.25e7);
  EXPECT_EQ(none.send_cpu_s_per_byte, 0.0);
  EXPECT_EQ(none.send_cpu_s_per_message, 0.0);
  EXPECT_EQ(none.receive_cpu_s_per_message, 0.0);
}

TEST(LinkFit, GivenCostsPerMessageAreKeptAndOnlyTheCostsPerByteFitted) {
  // A series of 400 us + 8 ns per byte fitted around a given 40 us per message: the slope takes
  // what the intercept leaves, above 8 ns; around the series' own intercept, exactly 8 ns; the
  // given costs come back as given (a negative one as 0), and the link's factors as without them.
  LinkProbe probe{.rtt_s = 100e-6};
  for (const double bytes : {65560.0, 262168.0, 1048600.0}) {
    probe.transfers.push_back({bytes, 300e-6 + bytes / 1e7});
    probe.cpu.push_back({bytes, 400e-6 + 8e-9 * bytes, 400e-6 + 8e-9 * bytes});
  }
  const NetworkFit free = fit_network(probe, 1.25e7);
  const NetworkFit kept = fit_network(probe, 1.25e7, {.send_s = 40e-6, .receive_s = -1.0});
  EXPECT_DOUBLE_EQ(kept.send_cpu_s_per_message, 40e-6);
  EXPECT_EQ(kept.receive_cpu_s_per_message, 0.0);
  EXPECT_GT(kept.send_cpu_s_per_byte, 8e-9);
  EXPECT_GT(kept.receive_cpu_s_per_byte, kept.send_cpu_s_per_byte);
  // It is a weighted mean of each point's own slope around the intercept: between the largest
  // point's (360 us over 1 MB: 8.34 ns) and the smallest's (360 us over 64 KiB: 13.5 ns).
  EXPECT_GT(kept.send_cpu_s_per_byte, 8e-9 + 360e-6 / 1048600.0);
  EXPECT_LT(kept.send_cpu_s_per_byte, 8e-9 + 360e-6 / 65560.0);
  const NetworkFit same =
      fit_network(probe, 1.25e7, {.send_s = free.send_cpu_s_per_message,
                                  .receive_s = free.receive_cpu_s_per_message});
  EXPECT_NEAR(same.send_cpu_s_per_byte, 8e-9, 1e-15);
  EXPECT_NEAR(same.receive_cpu_s_per_byte, 8e-9, 1e-15);
  EXPECT_EQ(kept.bandwidth_factor, free.bandwidth_factor);
  EXPECT_EQ(kept.latency_factor, free.latency_factor);
  // Losses below a given intercept fit no cost per byte, never a negative one.
  const NetworkFit above = fit_network(probe, 1.25e7, {.send_s = 1.0, .receive_s = 1.0});
  EXPECT_EQ(above.send_cpu_s_per_byte, 0.0);
}

TEST(LinkFit, ParsesTheCpuSeries) {
  const Json j = {{"rtt_median_s", 1e-4},
                  {"transfers", {{{"bytes", 1000}, {"seconds", 0.001}}}},
                  {"cpu", {{{"bytes", 1000}, {"sender_s", 2e-4}, {"receiver_s", 1e-4}}}}};
  const LinkProbe p = parse_link_probe(j, "probe.json");
  ASSERT_EQ(p.cpu.size(), 1U);
  EXPECT_DOUBLE_EQ(p.cpu[0].bytes, 1024.0);
  EXPECT_DOUBLE_EQ(p.cpu[0].sender_s, 2e-4);
  EXPECT_DOUBLE_EQ(p.cpu[0].receiver_s, 1e-4);
  Json bad = j;
  bad["cpu"][0].erase("receiver_s");
  EXPECT_THROW(parse_link_probe(bad, "probe.json"), InputError);
}

TEST(LinkFit, TheWaitingShareIsTheRanksMeanAsTheScenarioAcceptsIt) {
  Json j = {{"rtt_median_s", 1e-4},
            {"transfers",
             {{{"bytes", 1000}, {"seconds", 0.001}}, {{"bytes", 100000}, {"seconds", 0.01}}}},
            {"waiting_shares", {0.08, 0.12}}};
  EXPECT_NEAR(fit_network(parse_link_probe(j, "probe.json"), 1.25e7).waiting_share, 0.10, 1e-12);
  j["waiting_shares"] = {0.7, 0.9};
  EXPECT_EQ(fit_network(parse_link_probe(j, "probe.json"), 1.25e7).waiting_share,
            kMaxWaitingShare);
  j.erase("waiting_shares");
  EXPECT_EQ(fit_network(parse_link_probe(j, "probe.json"), 1.25e7).waiting_share, 0.0);
  j["waiting_shares"] = {0.1, 1.5};
  try {
    parse_link_probe(j, "probe.json");
    ADD_FAILURE() << "a share above 1 was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "/waiting_shares/1");
  }
}

TEST(Failures, NamesTheRankMpirunReports) {
  const std::string out =
      "--------------------------------------------------------------------------\n"
      "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
      "the job to be terminated. The first process to do so was:\n\n"
      "  Process name: [[40128,1],2]\n  Exit code:    3\n";
  EXPECT_EQ(describe_failure(out, Layout{1, 2}), "rank 2 (worker-1) exited with status 3");
  EXPECT_EQ(describe_failure("error: rank 0 (ps-0): no message from rank 1 (worker-0)\n",
                             Layout{1, 1}),
            "rank 0 (ps-0): no message from rank 1 (worker-0)");
  EXPECT_EQ(describe_failure("mpirun noticed that process rank 1 with PID 0 on node host1 exited "
                             "on signal 9 (Killed).\n",
                             Layout{1, 2}),
            "rank 1 (worker-0) was killed by signal 9 (Killed)");
  EXPECT_EQ(describe_failure("nothing useful\n", Layout{1, 1}), "");
  // A rank killed while the other sent to it: the sender aborts on the reset, and mpirun may
  // name neither. With two ranks the one gone is the other.
  const std::string reset =
      "[host0][[18346,1],0][../../../../../../opal/mca/btl/tcp/btl_tcp_frag.c:135:"
      "mca_btl_tcp_frag_send] mca_btl_tcp_frag_send: writev failed: Connection reset by peer "
      "(104)\n[host0:11110] ../../../../../../ompi/mca/pml/ob1/pml_ob1_sendreq.c:317 FATAL\n";
  EXPECT_EQ(describe_failure(reset, Layout{1, 1}),
            "rank 1 (worker-0) ended: rank 0 (ps-0) found its connection to it gone (Connection "
            "reset by peer)");
  EXPECT_EQ(describe_failure(reset, Layout{1, 2}),
            "rank 0 (ps-0) found a peer's connection gone (Connection reset by peer): a peer ended");
  EXPECT_EQ(rank_role(Layout{0, 2}, 0), "worker-0");
  EXPECT_EQ(rank_role(Layout{0, 2}, 1), "worker-1");
  EXPECT_EQ(rank_role(Layout{1, 2}, 0), "ps-0");
}

TEST(Profiles, ReusedOnlyWhenTheHostMatches) {
  const Json profile = {
      {"name", "p"},
      {"measured",
       {{"provenance", {{"cpu_model", "AMD EPYC (family 25, model 17)"}, {"threads", "1"},
                        {"onednn", "2.6.3 (N/A)"}}},
        {"end_to_end", {{{"model", "cifar_alexnet"}, {"batch", 32}}}}}}};
  std::map<std::string, std::string> host = {{"cpu_model", "AMD EPYC (family 25, model 17)"},
                                             {"threads", "1"}, {"onednn", "2.6.3 (N/A)"}};
  EXPECT_EQ(provenance_mismatch(host, profile, "p.json"), std::nullopt);
  host["threads"] = "2";
  EXPECT_EQ(provenance_mismatch(host, profile, "p.json"), "threads is '2' here, '1' in the profile");
  host["threads"] = "1";
  host["driver"] = "x";
  EXPECT_EQ(provenance_mismatch(host, profile, "p.json"), "driver is not recorded");
  EXPECT_TRUE(provenance_mismatch({}, Json{{"name", "gtx1080ti"}}, "d.json"));
  EXPECT_TRUE(profile_covers(profile, {{"cifar_alexnet", 32}}));
  EXPECT_FALSE(profile_covers(profile, {{"cifar_alexnet", 32}, {"cifar_allconv", 32}}));
}

TEST(Profiles, ReusedOnlyWhenMeasuredAsTheRunMeasures) {
  ValidateOptions o;
  const auto settings = calibration_settings(o);
  Json profile = {{"measured", {{"provenance", Json::object()}}}};
  for (const auto& [key, value] : settings) profile["measured"]["provenance"][key] = value;
  EXPECT_EQ(provenance_mismatch(settings, profile, "p.json"), std::nullopt);
  // Written by ralp calibrate with the run's own arguments: 0.02 s prints as its std::to_string.
  EXPECT_EQ(settings.at("min_time_s"), "0.020000");
  profile["measured"]["provenance"]["model_steps"] = "30";
  EXPECT_EQ(provenance_mismatch(settings, profile, "p.json"),
            "model_steps is '" + std::to_string(o.calibrate_model_steps) +
                "' here, '30' in the profile");
}

TEST(Profiles, NotReusedWhenMeasuredOnABusyMachine) {
  Json profile = {{"name", "p"}, {"measured", {{"provenance", {{"threads", "1"}}}}}};
  EXPECT_EQ(measured_under_load(profile, 2), std::nullopt);  // no load recorded
  profile["measured"]["provenance"]["loadavg_start"] = "1.95 2.03 3.20";
  EXPECT_EQ(measured_under_load(profile, 2), std::nullopt);
  profile["measured"]["provenance"]["loadavg_start"] = "9.73 9.01 8.31";
  EXPECT_EQ(measured_under_load(profile, 2), "measured under load average 9.73 on 2 cores");
  EXPECT_EQ(measured_under_load(profile, 16), std::nullopt);
}

TEST(SpeedCheck, ComparesTheModelsBothProfilesMeasured) {
  const auto profile = [](const Json& end_to_end) {
    return Json{{"name", "p"}, {"measured", {{"end_to_end", end_to_end}}}};
  };
  const Json start = profile({{{"model", "cifar_alexnet"}, {"batch", 32}, {"measured", 0.025}},
                              {{"model", "cifar_allconv"}, {"batch", 32}, {"measured", 0.020}},
                              {{"model", "vgg16"}, {"batch", 8}, {"measured", 1.0}}});
  const Json end = profile({{{"model", "cifar_allconv"}, {"batch", 32}, {"measured", 0.023}},
                            {{"model", "cifar_alexnet"}, {"batch", 32}, {"measured", 0.024}},
                            {{"model", "vgg16"}, {"batch", 16}, {"measured", 2.0}}});
  const auto checks = compare_end_to_end(start, end, "end.json");
  ASSERT_EQ(checks.size(), 2u);  // vgg16 was measured at another batch after
  EXPECT_EQ(checks[0].model, "cifar_alexnet");
  EXPECT_DOUBLE_EQ(checks[0].start_s, 0.025);
  EXPECT_DOUBLE_EQ(checks[0].end_s, 0.024);
  EXPECT_NEAR(checks[0].change_pct(), -4.0, 1e-9);
  EXPECT_EQ(checks[1].model, "cifar_allconv");
  EXPECT_NEAR(checks[1].change_pct(), 15.0, 1e-9);
  EXPECT_THROW(compare_end_to_end(start, Json{{"name", "p"}}, "end.json"), InputError);
  EXPECT_TRUE(compare_end_to_end(Json{{"name", "p"}}, end, "end.json").empty());
}

}  // namespace
}  // namespace ralp::validate
