package sim

// GPUQuota is how many GPUs of a model a cloud's region allows. The GCE
// front names the limit in its quota errors, including those a fault
// injects, which carry no limit of their own.
func (w *World) GPUQuota(cloud, region, gpuModel string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.quotaOf(cloud, region, gpuModel)
}
