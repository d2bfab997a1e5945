# bench_schedules: generation + verification of every schedule at 1024 ranks (issue 3, acc. 5).
# Included from tests/bench/CMakeLists.txt with: include(schedules.cmake)
add_executable(bench_schedules ${CMAKE_CURRENT_LIST_DIR}/bench_schedules.cpp)
target_link_libraries(bench_schedules PRIVATE tawpipe_schedules tawpipe_flags benchmark::benchmark)
add_test(NAME bench_schedules_smoke
         COMMAND bench_schedules --benchmark_filter=generate_only/onefoneb --benchmark_min_time=0.001)
set_tests_properties(bench_schedules_smoke PROPERTIES LABELS bench)
