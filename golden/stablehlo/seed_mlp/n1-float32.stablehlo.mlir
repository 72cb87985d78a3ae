// hloprobe-golden v1 kind=stablehlo case=seed_mlp n=1 precision=float32 jax=0.10.2 jaxlib=0.10.2 date=2026-11-30
module @jit__seed_batched attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @empty_mesh = <[]> {stablehlo.mesh = {axes = []}}
  func.func public @main(%arg0: tensor<1x2xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}, {}]>}, %arg1: tensor<48x2xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}, {}]>}, %arg2: tensor<48x48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}, {}]>}, %arg3: tensor<48x48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}, {}]>}, %arg4: tensor<1x48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}, {}]>}, %arg5: tensor<48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}, %arg6: tensor<48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}, %arg7: tensor<48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}, %arg8: tensor<1xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}, %arg9: tensor<48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}, %arg10: tensor<48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}, %arg11: tensor<48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}, %arg12: tensor<48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}, %arg13: tensor<48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}, %arg14: tensor<48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}) -> (tensor<1xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.dot_general %arg1, %arg0, contracting_dims = [1] x [1], precision = [HIGHEST, HIGHEST] : (tensor<48x2xf32>, tensor<1x2xf32>) -> tensor<48x1xf32>
    %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<48x1xf32>) -> tensor<1x48xf32>
    %2 = stablehlo.broadcast_in_dim %arg5, dims = [1] : (tensor<48xf32>) -> tensor<1x48xf32>
    %3 = stablehlo.add %1, %2 : tensor<1x48xf32>
    %4 = stablehlo.multiply %arg9, %arg9 : tensor<48xf32>
    %5 = stablehlo.negate %4 : tensor<48xf32>
    %6 = stablehlo.broadcast_in_dim %arg12, dims = [1] : (tensor<48xf32>) -> tensor<1x48xf32>
    %7 = stablehlo.subtract %3, %6 : tensor<1x48xf32>
    %8 = chlo.square %7 : tensor<1x48xf32> -> tensor<1x48xf32>
    %9 = stablehlo.broadcast_in_dim %5, dims = [1] : (tensor<48xf32>) -> tensor<1x48xf32>
    %10 = stablehlo.multiply %9, %8 : tensor<1x48xf32>
    %11 = stablehlo.exponential %10 : tensor<1x48xf32>
    %cst = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %12 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x48xf32>
    %13 = stablehlo.multiply %3, %12 : tensor<1x48xf32>
    %14 = stablehlo.sine %13 : tensor<1x48xf32>
    %15 = stablehlo.multiply %11, %14 : tensor<1x48xf32>
    %16 = stablehlo.dot_general %arg2, %15, contracting_dims = [1] x [1], precision = [HIGHEST, HIGHEST] : (tensor<48x48xf32>, tensor<1x48xf32>) -> tensor<48x1xf32>
    %17 = stablehlo.transpose %16, dims = [1, 0] : (tensor<48x1xf32>) -> tensor<1x48xf32>
    %18 = stablehlo.broadcast_in_dim %arg6, dims = [1] : (tensor<48xf32>) -> tensor<1x48xf32>
    %19 = stablehlo.add %17, %18 : tensor<1x48xf32>
    %20 = stablehlo.multiply %arg10, %arg10 : tensor<48xf32>
    %21 = stablehlo.negate %20 : tensor<48xf32>
    %22 = stablehlo.broadcast_in_dim %arg13, dims = [1] : (tensor<48xf32>) -> tensor<1x48xf32>
    %23 = stablehlo.subtract %19, %22 : tensor<1x48xf32>
    %24 = chlo.square %23 : tensor<1x48xf32> -> tensor<1x48xf32>
    %25 = stablehlo.broadcast_in_dim %21, dims = [1] : (tensor<48xf32>) -> tensor<1x48xf32>
    %26 = stablehlo.multiply %25, %24 : tensor<1x48xf32>
    %27 = stablehlo.exponential %26 : tensor<1x48xf32>
    %cst_0 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %28 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<1x48xf32>
    %29 = stablehlo.multiply %19, %28 : tensor<1x48xf32>
    %30 = stablehlo.sine %29 : tensor<1x48xf32>
    %31 = stablehlo.multiply %27, %30 : tensor<1x48xf32>
    %32 = stablehlo.dot_general %arg3, %31, contracting_dims = [1] x [1], precision = [HIGHEST, HIGHEST] : (tensor<48x48xf32>, tensor<1x48xf32>) -> tensor<48x1xf32>
    %33 = stablehlo.transpose %32, dims = [1, 0] : (tensor<48x1xf32>) -> tensor<1x48xf32>
    %34 = stablehlo.broadcast_in_dim %arg7, dims = [1] : (tensor<48xf32>) -> tensor<1x48xf32>
    %35 = stablehlo.add %33, %34 : tensor<1x48xf32>
    %36 = stablehlo.multiply %arg11, %arg11 : tensor<48xf32>
    %37 = stablehlo.negate %36 : tensor<48xf32>
    %38 = stablehlo.broadcast_in_dim %arg14, dims = [1] : (tensor<48xf32>) -> tensor<1x48xf32>
    %39 = stablehlo.subtract %35, %38 : tensor<1x48xf32>
    %40 = chlo.square %39 : tensor<1x48xf32> -> tensor<1x48xf32>
    %41 = stablehlo.broadcast_in_dim %37, dims = [1] : (tensor<48xf32>) -> tensor<1x48xf32>
    %42 = stablehlo.multiply %41, %40 : tensor<1x48xf32>
    %43 = stablehlo.exponential %42 : tensor<1x48xf32>
    %cst_1 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %44 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<1x48xf32>
    %45 = stablehlo.multiply %35, %44 : tensor<1x48xf32>
    %46 = stablehlo.sine %45 : tensor<1x48xf32>
    %47 = stablehlo.multiply %43, %46 : tensor<1x48xf32>
    %48 = stablehlo.dot_general %arg4, %47, contracting_dims = [1] x [1], precision = [HIGHEST, HIGHEST] : (tensor<1x48xf32>, tensor<1x48xf32>) -> tensor<1x1xf32>
    %49 = stablehlo.transpose %48, dims = [1, 0] : (tensor<1x1xf32>) -> tensor<1x1xf32>
    %50 = stablehlo.broadcast_in_dim %arg8, dims = [1] : (tensor<1xf32>) -> tensor<1x1xf32>
    %51 = stablehlo.add %49, %50 : tensor<1x1xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %52 = stablehlo.reduce(%51 init: %cst_2) applies stablehlo.add across dimensions = [1] : (tensor<1x1xf32>, tensor<f32>) -> tensor<1xf32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %53 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %54 = stablehlo.divide %52, %53 : tensor<1xf32>
    return %54 : tensor<1xf32>
  }
}
