// Pivots and summaries of records from hand-made tables and sweeps: each case states its records
// and the table they must give, so that every expected cell can be checked by hand.
#include "ralp/reports/pivot.hpp"

#include <gtest/gtest.h>

namespace ralp::reports {
namespace {

// Speedups of a made-up sweep: model vgg at 1G and 10G with 1 and 2 workers, res at 1G with 1
// worker only; ps at 1 for each point of vgg at 1G.
constexpr const char* kSpeedups =
    "model\tbandwidth\tworkers\tstrategy\tspeedup\n"
    "vgg\t1G\t1\tralp\t2\n"
    "vgg\t1G\t1\tps\t1\n"
    "vgg\t1G\t2\tralp\t4\n"
    "vgg\t1G\t2\tps\t1\n"
    "vgg\t10G\t1\tralp\t1.5\n"
    "vgg\t10G\t2\tralp\t3\n"
    "res\t1G\t1\tralp\t0.5\n";

RecordSet speedups() {
  RecordSet set;
  append_records(set, table_records(kSpeedups, '\t', "s.tsv"), "file", "s", "s.tsv");
  return set;
}

std::string markdown(const ReportTable& t) { return render_table(t, TableFormat::markdown); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

PivotSpec speedup_pivot() {
  PivotSpec spec;
  spec.fields = {parse_field_column("speedup", "--field")};
  spec.rows = {"model", "bandwidth"};
  spec.columns = {"workers"};
  spec.where = {parse_selection("strategy=ralp", "--where")};
  spec.style.format = NumberFormat::parse("{:.1f}", "--format");
  return spec;
}

TEST(NumberFormat, PrintsAsPrintfWould) {
  EXPECT_EQ(NumberFormat()(0.1), "0.1");  // the shortest exact text
  EXPECT_EQ(NumberFormat()(8.0), "8");
  EXPECT_EQ(NumberFormat::parse("{:.2f}x", "f")(18.5404), "18.54x");
  EXPECT_EQ(NumberFormat::parse("{:+.1%}", "f")(0.8167), "+81.7%");  // times 100
  EXPECT_EQ(NumberFormat::parse("{:+.1%}", "f")(-1.153), "-115.3%");
  EXPECT_EQ(NumberFormat::parse("{:.3g}", "f")(0.0), "0");
  EXPECT_EQ(NumberFormat::parse("{:.6g}", "f")(906.752256), "906.752");
  EXPECT_EQ(NumberFormat::parse("{:.2e}", "f")(1234.0), "1.23e+03");
  EXPECT_EQ(NumberFormat::parse("{{{:.1f}}} s", "f")(2.0), "{2.0} s");
  EXPECT_EQ(NumberFormat::parse("{:.2f}x", "f").around("2.3"), "2.3x");
  EXPECT_EQ(NumberFormat::parse("{:.1%}", "f").around("50"), "50%");
}

TEST(NumberFormat, RejectsWhatItCannotPrint) {
  for (const char* bad :
       {"", "x", "{:.2q}", "{:.f}", "{:.}", "{:.31f}", "{:2f}", "{", "}{}", "{:+}", "{:.2f"}) {
    EXPECT_EQ(error_of([&] {
                NumberFormat::parse(bad, "--format");
              }).rfind(std::string("--format is \"") + bad + "\", expected TEXT{SPEC}TEXT", 0),
              0u)
        << bad;
  }
}

TEST(Records, TablesTypeTheirColumns) {
  // "workers" holds numbers only; "cut" mixes them with text, so holds text; empty is absent.
  const RecordSet set = table_records("workers,cut,x\n1,fc6,\n2,7,\"a,\"\"b\"\n", ',', "t.csv");
  ASSERT_EQ(set.columns.size(), 3u);
  EXPECT_FALSE(set.columns[0].text);
  EXPECT_TRUE(set.columns[1].text);
  EXPECT_EQ(set.records[1][0], RecordValue(2.0));
  EXPECT_EQ(set.records[1][1], RecordValue(std::string("7")));
  EXPECT_EQ(set.records[0][2], RecordValue());
  EXPECT_EQ(set.records[1][2], RecordValue(std::string("a,\"b")));
  const RecordSet tsv = table_records("a\tb\nx\\ty\t1\n", '\t', "t.tsv");
  EXPECT_EQ(tsv.records[0][0], RecordValue(std::string("x\ty")));
}

TEST(Records, BadTablesNameTheFileAndLine) {
  EXPECT_EQ(error_of([] { table_records("a\tb\n1\t2\n\n3\n", '\t', "t.tsv"); }),
            "t.tsv: line 4 has 1 values, expected 2 as the header names");
  EXPECT_EQ(error_of([] { table_records("a,a\n", ',', "t.csv"); }),
            "t.csv: line 1 names the column a twice");
  EXPECT_EQ(error_of([] { table_records("", ',', "t.csv"); }),
            "t.csv: is empty, expected a header line");
  RecordSet set;
  EXPECT_EQ(error_of([&] {
              append_records(set, table_records("file\n1\n", ',', "t.csv"), "file", "t", "t.csv");
            }),
            "t.csv: has a column named file, the name of the files' axis; choose another with "
            "--file-axis");
}

TEST(Records, InputsTakeTheirLabelBeforeAnEqualsSign) {
  EXPECT_EQ(parse_record_input("vgg16=a/sweep.json").label, "vgg16");
  EXPECT_EQ(parse_record_input("vgg16=a/sweep.json").path, "a/sweep.json");
  EXPECT_EQ(parse_record_input("a/b=c.json").label, "a/b=c.json");  // a '/' before '=': a path
  EXPECT_EQ(parse_record_input("=c.json").path, "=c.json");
}

TEST(Records, SweepsGiveOneRecordPerPointAndStrategy) {
  SweepDocument sweep;
  sweep.axes = {{"workers", {1, 2}}, {"strategies", {"ps", "ralp"}}};
  for (const int w : {1, 2}) {
    SweepPoint p;
    p.values = {{"workers", w}};
    StrategyResult ps;
    ps.label = "ps";
    ps.images_per_s = 10.0 * w;
    StrategyResult ralp;
    ralp.label = "ralp@fc6";
    ralp.kind = StrategyKind::ralp;
    ralp.cut = "fc6";
    ralp.images_per_s = 30.0 * w;
    ralp.speedup_vs_ps = 3.0;
    p.results = {ps, ralp};
    sweep.points.push_back(p);
  }
  const RecordSet set = sweep_records(sweep);
  ASSERT_EQ(set.records.size(), 4u);
  EXPECT_EQ(set.names(true), (std::vector<std::string>{"workers", "strategy", "kind", "cut"}));
  const size_t images = *set.find("images_per_s");
  const size_t speedup = *set.find("speedup_vs_ps");
  EXPECT_EQ(set.records[3][images], RecordValue(60.0));  // ralp at 2 workers: 30 x 2
  EXPECT_EQ(set.records[3][*set.find("kind")], RecordValue(std::string("ralp")));
  EXPECT_EQ(set.records[0][speedup], RecordValue());  // ps has no speedup here
  EXPECT_EQ(set.records[0][*set.find("cut")], RecordValue());
}

TEST(Pivot, OneFieldByRowsAndColumns) {
  // Rows in the order their values first appear; res has no 2-worker point.
  EXPECT_EQ(markdown(pivot_table(speedups(), speedup_pivot())),
            "| model | bandwidth | 1 w | 2 w |\n"
            "|---|---|---:|---:|\n"
            "| vgg | 1G | 2.0 | 4.0 |\n"
            "| vgg | 10G | 1.5 | 3.0 |\n"
            "| res | 1G | 0.5 | - |\n");
}

TEST(Pivot, RowOrderIsFirstAppearanceOfTheWholeRow) {
  // Rows bandwidth then model: (1G, vgg) first, then (10G, vgg), then (1G, res).
  PivotSpec spec = speedup_pivot();
  spec.rows = {"bandwidth", "model"};
  const ReportTable t = pivot_table(speedups(), spec);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[1][0], "10G");
  EXPECT_EQ(t.rows[2][1], "res");
}

TEST(Pivot, RelativeToAReferenceLeavesItOut) {
  // vgg at 10G over vgg at 1G: 1.5 / 2 = 0.75 and 3 / 4 = 0.75; res has no 10G row.
  PivotSpec spec = speedup_pivot();
  spec.reference = parse_reference("bandwidth=1G", "--relative-to", true);
  spec.style.format = NumberFormat::parse("{:.2f}", "--format");
  EXPECT_EQ(markdown(pivot_table(speedups(), spec)),
            "| model | bandwidth | 1 w | 2 w |\n"
            "|---|---|---:|---:|\n"
            "| vgg | 10G | 0.75 | 0.75 |\n");
  // Differences instead: 1.5 - 2 = -0.5 and 3 - 4 = -1.
  spec.reference->ratio = false;
  EXPECT_EQ(pivot_table(speedups(), spec).rows[0],
            (std::vector<std::string>{"vgg", "10G", "-0.50", "-1.00"}));
}

TEST(Pivot, ReferenceOnAnAxisOutsideTheTable) {
  // ralp over ps with strategy in neither rows nor columns: vgg at 1G, 2 / 1 and 4 / 1; the
  // other rows have no ps record.
  PivotSpec spec = speedup_pivot();
  spec.reference = parse_reference("strategy=ps", "--relative-to", true);
  const ReportTable t = pivot_table(speedups(), spec);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"vgg", "1G", "2.0", "4.0"}));
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"vgg", "10G", "-", "-"}));
}

TEST(Pivot, FieldColumnsPickTheirRecords) {
  // Per model, bandwidth and workers: ralp's and ps's speedup side by side, ps's divided by 10.
  PivotSpec spec;
  spec.fields = {parse_field_column("speedup[strategy=ralp]", "--field"),
                 parse_field_column("speedup[strategy=ps]", "--field")};
  spec.rows = {"model", "bandwidth", "workers"};
  spec.where = {parse_selection("model=vgg", "--where"),
                parse_selection("bandwidth=1G", "--where")};
  spec.style.headers = {{"speedup[strategy=ralp]", "ralp"}, {"speedup[strategy=ps]", "ps / 10"}};
  spec.style.divisors = {{"speedup[strategy=ps]", 10.0}};
  EXPECT_EQ(markdown(pivot_table(speedups(), spec)),
            "| model | bandwidth | workers | ralp | ps / 10 |\n"
            "|---|---|---:|---:|---:|\n"
            "| vgg | 1G | 1 | 2 | 0.1 |\n"
            "| vgg | 1G | 2 | 4 | 0.1 |\n");
}

TEST(Pivot, TextFieldsAreLeftAligned) {
  const RecordSet set =
      table_records("model\tcut\tgain\nvgg\tfc6\t0.5\nres\tconv1\t-1.2\n", '\t', "v.tsv");
  PivotSpec spec;
  spec.fields = {parse_field_column("cut", "--field"), parse_field_column("gain", "--field")};
  spec.rows = {"model"};
  spec.style.formats = {{"gain", NumberFormat::parse("{:+.1%}", "--format")}};
  EXPECT_EQ(markdown(pivot_table(set, spec)),
            "| model | cut | gain |\n"
            "|---|---|---:|\n"
            "| vgg | fc6 | +50.0% |\n"
            "| res | conv1 | -120.0% |\n");
}

TEST(Pivot, ACellOfSeveralRecordsNamesWhatTellsThemApart) {
  PivotSpec spec = speedup_pivot();
  spec.where.clear();
  EXPECT_EQ(error_of([&] { pivot_table(speedups(), spec); }),
            "--rows and --columns leave 2 records in the cell at model vgg, bandwidth 1G, workers "
            "1, which differ in strategy (ralp, ps); add an axis to --rows or --columns, or pick "
            "one with --where");
}

TEST(Pivot, UnknownNamesAndValuesAreErrors) {
  PivotSpec spec = speedup_pivot();
  spec.rows = {"modle"};
  EXPECT_EQ(error_of([&] { pivot_table(speedups(), spec); }),
            "--rows names \"modle\", which is not an axis of these inputs; the axes are: file, "
            "model, bandwidth, workers, strategy, speedup (did you mean \"model\"?)");
  spec = speedup_pivot();
  spec.where = {parse_selection("strategy=rlap", "--where")};
  EXPECT_EQ(error_of([&] { pivot_table(speedups(), spec); }),
            "--where names strategy=rlap, a value no record has; strategy takes ralp, ps (did you "
            "mean \"ralp\"?)");
  spec = speedup_pivot();
  spec.style.headers = {{"device", "d"}};
  EXPECT_EQ(error_of([&] { pivot_table(speedups(), spec); }),
            "--header names device, which is neither a --rows axis, a --columns axis nor a "
            "--field of this table");
  spec = speedup_pivot();
  spec.fields.push_back(spec.fields.front());
  EXPECT_EQ(error_of([&] { pivot_table(speedups(), spec); }),
            "--columns takes one --field, given 2; without --columns each --field is a column");
}

TEST(Pivot, RendersCsvTsvAndGnuplotData) {
  const ReportTable t{{"model", "1 w"}, {true, false}, {{"a,b", "2"}, {"c\td", "-"}}};
  EXPECT_EQ(render_table(t, TableFormat::csv), "model,1 w\n\"a,b\",2\nc\td,-\n");
  EXPECT_EQ(render_table(t, TableFormat::tsv), "model\t1 w\na,b\t2\nc\\td\t-\n");
  EXPECT_EQ(render_table(t, TableFormat::dat), "# model \"1 w\"\n\"a,b\" 2\n\"c\td\" -\n");
}

TEST(Pivot, OptionTextsParse) {
  const FieldColumn f = parse_field_column("ps0_in[strategy=ralp@fc6,workers=8]", "--field");
  EXPECT_EQ(f.field, "ps0_in");
  EXPECT_EQ(f.pick, (std::vector<std::pair<std::string, std::string>>{{"strategy", "ralp@fc6"},
                                                                      {"workers", "8"}}));
  EXPECT_EQ(error_of([] { parse_field_column("x[a]", "--field"); }),
            "--field is \"x[a]\", whose \"a\" is not AXIS=VALUE, expected FIELD or "
            "FIELD[AXIS=VALUE,...]");
  EXPECT_EQ(split_keyed("x[a=b]=ps: in")->first, "x[a=b]");
  EXPECT_EQ(split_keyed("x[a=b]=ps: in")->second, "ps: in");
  EXPECT_FALSE(split_keyed("x[a=b]"));
  EXPECT_EQ(parse_selection("split=do not split,split", "--where").values,
            (std::vector<std::string>{"do not split", "split"}));
  EXPECT_EQ(error_of([] { parse_selection("kind", "--where"); }),
            "--where is \"kind\", expected AXIS=VALUE[,VALUE...]");
}

SummarySpec speedup_summary(std::vector<std::string> statistics) {
  SummarySpec spec;
  spec.field = "speedup";
  spec.rows = {"model", "bandwidth"};
  spec.along = {"workers"};
  spec.where = {parse_selection("strategy=ralp", "--where")};
  for (const std::string& s : statistics) spec.statistics.push_back(parse_statistic(s, "--stat"));
  spec.format = NumberFormat::parse("{:.1f}x", "--format");
  return spec;
}

TEST(Summary, StatisticsAlongAnAxisPerRow) {
  // vgg 1G: 2 then 4; vgg 10G: 1.5 then 3; res 1G: 0.5.
  const SummarySpec spec =
      speedup_summary({"max", "argmax", "first>=3", "all>1", "count", "count>=2"});
  EXPECT_EQ(markdown(summary_table(speedups(), spec)),
            "| model | bandwidth | largest speedup | at workers | first workers >= 3x | workers "
            "with speedup > 1x | count | count speedup >= 2x |\n"
            "|---|---|---:|---:|---:|---:|---:|---:|\n"
            "| vgg | 1G | 4.0x | 2 | 2 | 1, 2 | 2 | 2 |\n"
            "| vgg | 10G | 3.0x | 2 | 2 | 1, 2 | 2 | 1 |\n"
            "| res | 1G | 0.5x | 1 | never | none | 1 | 0 |\n");
}

TEST(Summary, EndsExtremesAndTies) {
  // Without rows, over every ralp record in workers order (1: 2, 1.5, 0.5; 2: 4, 3): the
  // smallest is res's 0.5 at 1, the largest vgg 1G's 4 at 2.
  SummarySpec spec = speedup_summary({"min", "argmin", "max", "argmax", "count"});
  spec.rows.clear();
  spec.along = {"model", "bandwidth", "workers"};
  EXPECT_EQ(summary_table(speedups(), spec).rows[0],
            (std::vector<std::string>{"0.5x", "res, 1G, 1", "4.0x", "vgg, 1G, 2", "5"}));
  // first and last along workers per row: vgg 10G goes from 1.5 to 3.
  spec = speedup_summary({"first", "last"});
  EXPECT_EQ(summary_table(speedups(), spec).rows[1],
            (std::vector<std::string>{"vgg", "10G", "1.5x", "3.0x"}));
  // Ties go to the first in --along order: both of vgg 1G's ps records are 1.
  spec = speedup_summary({"max", "argmax"});
  spec.where = {parse_selection("strategy=ps", "--where")};
  EXPECT_EQ(summary_table(speedups(), spec).rows[0],
            (std::vector<std::string>{"vgg", "1G", "1.0x", "1"}));
}

TEST(Summary, AgainstAReference) {
  // ralp minus ps at the same model, bandwidth and workers: 2 - 1 = 1 and 4 - 1 = 3 (vgg 1G);
  // no ps record elsewhere. absmax is 3; a ratio's last at vgg 1G is 4 / 1.
  SummarySpec spec = speedup_summary({"absmax"});
  spec.rows.clear();
  spec.where.clear();
  spec.reference = parse_reference("strategy=ps", "--difference-from", false);
  EXPECT_EQ(summary_table(speedups(), spec).rows[0], (std::vector<std::string>{"3.0x"}));
  spec = speedup_summary({"last"});
  spec.where.clear();
  spec.reference = parse_reference("strategy=ps", "--relative-to", true);
  EXPECT_EQ(summary_table(speedups(), spec).rows[0],
            (std::vector<std::string>{"vgg", "1G", "4.0x"}));
}

TEST(Summary, CountsWithoutAFieldAndOfNothing) {
  SummarySpec spec;
  spec.statistics = {parse_statistic("count", "--stat")};
  spec.where = {parse_selection("strategy=ps", "--where")};
  EXPECT_EQ(summary_table(speedups(), spec).rows[0], (std::vector<std::string>{"2"}));
  spec.where.push_back(parse_selection("model=res", "--where"));
  EXPECT_EQ(summary_table(speedups(), spec).rows[0], (std::vector<std::string>{"0"}));
}

TEST(Summary, BadStatisticsAreErrors) {
  EXPECT_EQ(error_of([] { parse_statistic("mx", "--stat"); }),
            "--stat is \"mx\", expected count, min, max, absmax, first, last, argmin, argmax, "
            "count OP T, first OP T or all OP T (OP one of >=, >, <=, <) (did you mean \"max\"?)");
  EXPECT_EQ(error_of([] { parse_statistic("max>2", "--stat"); }).substr(0, 22),
            "--stat is \"max>2\", exp");
  EXPECT_EQ(error_of([] { parse_statistic("all", "--stat"); }).substr(0, 20),
            "--stat is \"all\", exp");
  SummarySpec spec = speedup_summary({"argmax"});
  spec.along.clear();
  EXPECT_EQ(error_of([&] { summary_table(speedups(), spec); }),
            "--stat argmax needs --along, the axis its answer is a value of");
  spec = speedup_summary({"first"});
  spec.rows = {"model"};  // vgg's first workers value holds 1G's and 10G's records
  EXPECT_EQ(error_of([&] { summary_table(speedups(), spec); }),
            "--stat first finds several records at 1 in the row model vgg; add the axis that "
            "tells them apart to --rows or --along, or pick one with --where");
  spec = speedup_summary({"max"});
  spec.field = "strategy";
  EXPECT_EQ(error_of([&] { summary_table(speedups(), spec); }),
            "--field names strategy, which holds text, expected numbers");
}

}  // namespace
}  // namespace ralp::reports
