// hloprobe-golden v1 kind=stablehlo case=seed_mlp n=2 precision=bfloat16 jax=0.10.2 jaxlib=0.10.2 date=2026-11-30
module @jit__seed_batched attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @empty_mesh = <[]> {stablehlo.mesh = {axes = []}}
  func.func public @main(%arg0: tensor<2x2xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}, {}]>}, %arg1: tensor<48x2xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}, {}]>}, %arg2: tensor<48x48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}, {}]>}, %arg3: tensor<48x48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}, {}]>}, %arg4: tensor<1x48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}, {}]>}, %arg5: tensor<48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}, %arg6: tensor<48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}, %arg7: tensor<48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}, %arg8: tensor<1xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}, %arg9: tensor<48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}, %arg10: tensor<48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}, %arg11: tensor<48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}, %arg12: tensor<48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}, %arg13: tensor<48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}, %arg14: tensor<48xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}]>}) -> (tensor<2xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.dot_general %arg1, %arg0, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<48x2xf32>, tensor<2x2xf32>) -> tensor<48x2xf32>
    %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<48x2xf32>) -> tensor<2x48xf32>
    %2 = stablehlo.broadcast_in_dim %arg5, dims = [1] : (tensor<48xf32>) -> tensor<1x48xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0, 1] : (tensor<1x48xf32>) -> tensor<2x48xf32>
    %4 = stablehlo.add %1, %3 : tensor<2x48xf32>
    %5 = stablehlo.multiply %arg9, %arg9 : tensor<48xf32>
    %6 = stablehlo.negate %5 : tensor<48xf32>
    %7 = stablehlo.broadcast_in_dim %arg12, dims = [1] : (tensor<48xf32>) -> tensor<1x48xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<1x48xf32>) -> tensor<2x48xf32>
    %9 = stablehlo.subtract %4, %8 : tensor<2x48xf32>
    %10 = chlo.square %9 : tensor<2x48xf32> -> tensor<2x48xf32>
    %11 = stablehlo.broadcast_in_dim %6, dims = [1] : (tensor<48xf32>) -> tensor<1x48xf32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [0, 1] : (tensor<1x48xf32>) -> tensor<2x48xf32>
    %13 = stablehlo.multiply %12, %10 : tensor<2x48xf32>
    %14 = stablehlo.exponential %13 : tensor<2x48xf32>
    %cst = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x48xf32>
    %16 = stablehlo.multiply %4, %15 : tensor<2x48xf32>
    %17 = stablehlo.sine %16 : tensor<2x48xf32>
    %18 = stablehlo.multiply %14, %17 : tensor<2x48xf32>
    %19 = stablehlo.dot_general %arg2, %18, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<48x48xf32>, tensor<2x48xf32>) -> tensor<48x2xf32>
    %20 = stablehlo.transpose %19, dims = [1, 0] : (tensor<48x2xf32>) -> tensor<2x48xf32>
    %21 = stablehlo.broadcast_in_dim %arg6, dims = [1] : (tensor<48xf32>) -> tensor<1x48xf32>
    %22 = stablehlo.broadcast_in_dim %21, dims = [0, 1] : (tensor<1x48xf32>) -> tensor<2x48xf32>
    %23 = stablehlo.add %20, %22 : tensor<2x48xf32>
    %24 = stablehlo.multiply %arg10, %arg10 : tensor<48xf32>
    %25 = stablehlo.negate %24 : tensor<48xf32>
    %26 = stablehlo.broadcast_in_dim %arg13, dims = [1] : (tensor<48xf32>) -> tensor<1x48xf32>
    %27 = stablehlo.broadcast_in_dim %26, dims = [0, 1] : (tensor<1x48xf32>) -> tensor<2x48xf32>
    %28 = stablehlo.subtract %23, %27 : tensor<2x48xf32>
    %29 = chlo.square %28 : tensor<2x48xf32> -> tensor<2x48xf32>
    %30 = stablehlo.broadcast_in_dim %25, dims = [1] : (tensor<48xf32>) -> tensor<1x48xf32>
    %31 = stablehlo.broadcast_in_dim %30, dims = [0, 1] : (tensor<1x48xf32>) -> tensor<2x48xf32>
    %32 = stablehlo.multiply %31, %29 : tensor<2x48xf32>
    %33 = stablehlo.exponential %32 : tensor<2x48xf32>
    %cst_0 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %34 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x48xf32>
    %35 = stablehlo.multiply %23, %34 : tensor<2x48xf32>
    %36 = stablehlo.sine %35 : tensor<2x48xf32>
    %37 = stablehlo.multiply %33, %36 : tensor<2x48xf32>
    %38 = stablehlo.dot_general %arg3, %37, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<48x48xf32>, tensor<2x48xf32>) -> tensor<48x2xf32>
    %39 = stablehlo.transpose %38, dims = [1, 0] : (tensor<48x2xf32>) -> tensor<2x48xf32>
    %40 = stablehlo.broadcast_in_dim %arg7, dims = [1] : (tensor<48xf32>) -> tensor<1x48xf32>
    %41 = stablehlo.broadcast_in_dim %40, dims = [0, 1] : (tensor<1x48xf32>) -> tensor<2x48xf32>
    %42 = stablehlo.add %39, %41 : tensor<2x48xf32>
    %43 = stablehlo.multiply %arg11, %arg11 : tensor<48xf32>
    %44 = stablehlo.negate %43 : tensor<48xf32>
    %45 = stablehlo.broadcast_in_dim %arg14, dims = [1] : (tensor<48xf32>) -> tensor<1x48xf32>
    %46 = stablehlo.broadcast_in_dim %45, dims = [0, 1] : (tensor<1x48xf32>) -> tensor<2x48xf32>
    %47 = stablehlo.subtract %42, %46 : tensor<2x48xf32>
    %48 = chlo.square %47 : tensor<2x48xf32> -> tensor<2x48xf32>
    %49 = stablehlo.broadcast_in_dim %44, dims = [1] : (tensor<48xf32>) -> tensor<1x48xf32>
    %50 = stablehlo.broadcast_in_dim %49, dims = [0, 1] : (tensor<1x48xf32>) -> tensor<2x48xf32>
    %51 = stablehlo.multiply %50, %48 : tensor<2x48xf32>
    %52 = stablehlo.exponential %51 : tensor<2x48xf32>
    %cst_1 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %53 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<2x48xf32>
    %54 = stablehlo.multiply %42, %53 : tensor<2x48xf32>
    %55 = stablehlo.sine %54 : tensor<2x48xf32>
    %56 = stablehlo.multiply %52, %55 : tensor<2x48xf32>
    %57 = stablehlo.dot_general %arg4, %56, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<1x48xf32>, tensor<2x48xf32>) -> tensor<1x2xf32>
    %58 = stablehlo.transpose %57, dims = [1, 0] : (tensor<1x2xf32>) -> tensor<2x1xf32>
    %59 = stablehlo.broadcast_in_dim %arg8, dims = [1] : (tensor<1xf32>) -> tensor<1x1xf32>
    %60 = stablehlo.broadcast_in_dim %59, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<2x1xf32>
    %61 = stablehlo.add %58, %60 : tensor<2x1xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %62 = stablehlo.reduce(%61 init: %cst_2) applies stablehlo.add across dimensions = [1] : (tensor<2x1xf32>, tensor<f32>) -> tensor<2xf32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %63 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %64 = stablehlo.divide %62, %63 : tensor<2xf32>
    return %64 : tensor<2xf32>
  }
}
