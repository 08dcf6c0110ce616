"""Field tables of the core (``v1``) API group's messages, from its ``generated.proto``.

The notation is described in :mod:`apiserver.protobuf.schema`. Pointer marks (``?``) follow the Go
types (``*bool``, ``*int64``, ``*string``); a field number missing here is skipped when decoding.
Only the messages reachable from the served kinds (ConfigMap, Event, Namespace, Node, Pod, Secret,
ServiceAccount, Service) are listed; persistent-volume-only types are left out.
"""

from __future__ import annotations

TABLES: dict[str, str] = {
    "Affinity": "1 nodeAffinity NodeAffinity; 2 podAffinity PodAffinity; 3 podAntiAffinity PodAntiAffinity",
    "AppArmorProfile": "1 type s; 2 localhostProfile s?",
    "AttachedVolume": "1 name s; 2 devicePath s",
    "AWSElasticBlockStoreVolumeSource": "1 volumeID s; 2 fsType s; 3 partition i; 4 readOnly b",
    "AzureDiskVolumeSource": (
        "1 diskName s; 2 diskURI s; 3 cachingMode s?; 4 fsType s?; 5 readOnly b?; 6 kind s?"
    ),
    "AzureFileVolumeSource": "1 secretName s; 2 shareName s; 3 readOnly b",
    "CSIVolumeSource": (
        "1 driver s; 2 readOnly b?; 3 fsType s?; 4 volumeAttributes {s};"
        " 5 nodePublishSecretRef LocalObjectReference"
    ),
    "Capabilities": "1 add s*; 2 drop s*",
    "CephFSVolumeSource": (
        "1 monitors s*; 2 path s; 3 user s; 4 secretFile s; 5 secretRef LocalObjectReference; 6 readOnly b"
    ),
    "CinderVolumeSource": "1 volumeID s; 2 fsType s; 3 readOnly b; 4 secretRef LocalObjectReference",
    "ClientIPConfig": "1 timeoutSeconds i?",
    "ClusterTrustBundleProjection": (
        "1 name s?; 2 signerName s?; 3 labelSelector LabelSelector; 5 optional b?; 4 path s"
    ),
    "ConfigMap": "1 metadata ObjectMeta; 4 immutable b?; 2 data {s}; 3 binaryData {B}",
    "ConfigMapEnvSource": "1 ^localObjectReference LocalObjectReference; 2 optional b?",
    "ConfigMapKeySelector": "1 ^localObjectReference LocalObjectReference; 2 key s; 3 optional b?",
    "ConfigMapProjection": "1 ^localObjectReference LocalObjectReference; 2 items KeyToPath*; 4 optional b?",
    "ConfigMapVolumeSource": (
        "1 ^localObjectReference LocalObjectReference; 2 items KeyToPath*; 3 defaultMode i?; 4 optional b?"
    ),
    "Container": (
        "1 name s!; 2 image s; 3 command s*; 4 args s*; 5 workingDir s; 6 ports ContainerPort*;"
        " 19 envFrom EnvFromSource*; 7 env EnvVar*; 8 resources ResourceRequirements;"
        " 23 resizePolicy ContainerResizePolicy*; 24 restartPolicy s?;"
        " 25 restartPolicyRules ContainerRestartRule*; 9 volumeMounts VolumeMount*;"
        " 21 volumeDevices VolumeDevice*; 10 livenessProbe Probe; 11 readinessProbe Probe;"
        " 22 startupProbe Probe; 12 lifecycle Lifecycle; 13 terminationMessagePath s;"
        " 20 terminationMessagePolicy s; 14 imagePullPolicy s; 15 securityContext SecurityContext;"
        " 16 stdin b; 17 stdinOnce b; 18 tty b"
    ),
    "ContainerImage": "1 names s*; 2 sizeBytes i",
    "ContainerPort": "1 name s; 2 hostPort i; 3 containerPort i!; 4 protocol s; 5 hostIP s",
    "ContainerResizePolicy": "1 resourceName s; 2 restartPolicy s",
    "ContainerRestartRule": "1 action s; 2 exitCodes ContainerRestartRuleOnExitCodes",
    "ContainerRestartRuleOnExitCodes": "1 operator s; 2 values i*",
    "ContainerState": (
        "1 waiting ContainerStateWaiting; 2 running ContainerStateRunning;"
        " 3 terminated ContainerStateTerminated"
    ),
    "ContainerStateRunning": "1 startedAt Time",
    "ContainerStateTerminated": (
        "1 exitCode i; 2 signal i; 3 reason s; 4 message s; 5 startedAt Time; 6 finishedAt Time;"
        " 7 containerID s"
    ),
    "ContainerStateWaiting": "1 reason s; 2 message s",
    "ContainerStatus": (
        "1 name s!; 2 state ContainerState; 3 lastState ContainerState; 4 ready b!; 5 restartCount i!;"
        " 6 image s!; 7 imageID s!; 8 containerID s; 9 started b?; 10 allocatedResources {Quantity};"
        " 11 resources ResourceRequirements; 12 volumeMounts VolumeMountStatus*; 13 user ContainerUser;"
        " 14 allocatedResourcesStatus ResourceStatus*; 15 stopSignal s?"
    ),
    "ContainerUser": "1 linux LinuxContainerUser",
    "DaemonEndpoint": "1 Port i!",
    "DownwardAPIProjection": "1 items DownwardAPIVolumeFile*",
    "DownwardAPIVolumeFile": (
        "1 path s; 2 fieldRef ObjectFieldSelector; 3 resourceFieldRef ResourceFieldSelector; 4 mode i?"
    ),
    "DownwardAPIVolumeSource": "1 items DownwardAPIVolumeFile*; 2 defaultMode i?",
    "EmptyDirVolumeSource": "1 medium s; 2 sizeLimit Quantity",
    "EnvFromSource": "1 prefix s; 2 configMapRef ConfigMapEnvSource; 3 secretRef SecretEnvSource",
    "EnvVar": "1 name s!; 2 value s; 3 valueFrom EnvVarSource",
    "EnvVarSource": (
        "1 fieldRef ObjectFieldSelector; 2 resourceFieldRef ResourceFieldSelector;"
        " 3 configMapKeyRef ConfigMapKeySelector; 4 secretKeyRef SecretKeySelector;"
        " 5 fileKeyRef FileKeySelector"
    ),
    "EphemeralContainer": "1 ^ephemeralContainerCommon EphemeralContainerCommon; 2 targetContainerName s",
    "EphemeralVolumeSource": "1 volumeClaimTemplate PersistentVolumeClaimTemplate",
    "Event": (
        "1 metadata ObjectMeta; 2 involvedObject ObjectReference; 3 reason s; 4 message s;"
        " 5 source EventSource; 6 firstTimestamp Time; 7 lastTimestamp Time; 8 count i; 9 type s;"
        " 10 eventTime MicroTime; 11 series EventSeries; 12 action s; 13 related ObjectReference;"
        " 14 reportingComponent s; 15 reportingInstance s"
    ),
    "EventSeries": "1 count i; 2 lastObservedTime MicroTime",
    "EventSource": "1 component s; 2 host s",
    "ExecAction": "1 command s*",
    "FCVolumeSource": "1 targetWWNs s*; 2 lun i?; 3 fsType s; 4 readOnly b; 5 wwids s*",
    "FileKeySelector": "1 volumeName s; 2 path s; 3 key s; 4 optional b?",
    "FlexVolumeSource": (
        "1 driver s; 2 fsType s; 3 secretRef LocalObjectReference; 4 readOnly b; 5 options {s}"
    ),
    "FlockerVolumeSource": "1 datasetName s; 2 datasetUUID s",
    "GCEPersistentDiskVolumeSource": "1 pdName s; 2 fsType s; 3 partition i; 4 readOnly b",
    "GRPCAction": "1 port i; 2 service s?",
    "GitRepoVolumeSource": "1 repository s; 2 revision s; 3 directory s",
    "GlusterfsVolumeSource": "1 endpoints s; 2 path s; 3 readOnly b",
    "HTTPGetAction": "1 path s; 2 port IntOrString; 3 host s; 4 scheme s; 5 httpHeaders HTTPHeader*",
    "HTTPHeader": "1 name s!; 2 value s!",
    "HostAlias": "1 ip s; 2 hostnames s*",
    "HostIP": "1 ip s!",
    "HostPathVolumeSource": "1 path s; 2 type s?",
    "ISCSIVolumeSource": (
        "1 targetPortal s; 2 iqn s; 3 lun i; 4 iscsiInterface s; 5 fsType s; 6 readOnly b; 7 portals s*;"
        " 8 chapAuthDiscovery b; 11 chapAuthSession b; 10 secretRef LocalObjectReference;"
        " 12 initiatorName s?"
    ),
    "ImageVolumeSource": "1 reference s; 2 pullPolicy s",
    "KeyToPath": "1 key s!; 2 path s!; 3 mode i?",
    "Lifecycle": "1 postStart LifecycleHandler; 2 preStop LifecycleHandler; 3 stopSignal s?",
    "LifecycleHandler": (
        "1 exec ExecAction; 2 httpGet HTTPGetAction; 3 tcpSocket TCPSocketAction; 4 sleep SleepAction"
    ),
    "LinuxContainerUser": "1 uid i; 2 gid i; 3 supplementalGroups i*",
    "LoadBalancerIngress": "1 ip s; 2 hostname s; 3 ipMode s?; 4 ports PortStatus*",
    "LoadBalancerStatus": "1 ingress LoadBalancerIngress*",
    "LocalObjectReference": "1 name s",
    "NFSVolumeSource": "1 server s; 2 path s; 3 readOnly b",
    "Namespace": "1 metadata ObjectMeta; 2 spec NamespaceSpec; 3 status NamespaceStatus",
    "NamespaceCondition": "1 type s!; 2 status s!; 4 lastTransitionTime Time; 5 reason s; 6 message s",
    "NamespaceSpec": "1 finalizers s*",
    "NamespaceStatus": "1 phase s; 2 conditions NamespaceCondition*",
    "Node": "1 metadata ObjectMeta; 2 spec NodeSpec; 3 status NodeStatus",
    "NodeAddress": "1 type s!; 2 address s!",
    "NodeAffinity": (
        "1 requiredDuringSchedulingIgnoredDuringExecution NodeSelector;"
        " 2 preferredDuringSchedulingIgnoredDuringExecution PreferredSchedulingTerm*"
    ),
    "NodeCondition": (
        "1 type s!; 2 status s!; 3 lastHeartbeatTime Time; 4 lastTransitionTime Time; 5 reason s; 6 message s"
    ),
    "NodeConfigSource": "2 configMap ConfigMapNodeConfigSource",
    "ConfigMapNodeConfigSource": (
        "1 namespace s; 2 name s; 3 uid s; 4 resourceVersion s; 5 kubeletConfigKey s"
    ),
    "NodeConfigStatus": (
        "1 assigned NodeConfigSource; 2 active NodeConfigSource; 3 lastKnownGood NodeConfigSource; 4 error s"
    ),
    "NodeDaemonEndpoints": "1 kubeletEndpoint DaemonEndpoint",
    "NodeFeatures": "1 supplementalGroupsPolicy b?; 2 containerUlimits b?",
    "NodeRuntimeHandler": "1 name s; 2 features NodeRuntimeHandlerFeatures",
    "NodeRuntimeHandlerFeatures": "1 recursiveReadOnlyMounts b?; 2 userNamespaces b?",
    "NodeSelector": "1 nodeSelectorTerms NodeSelectorTerm*",
    "NodeSelectorRequirement": "1 key s!; 2 operator s!; 3 values s*",
    "NodeSelectorTerm": "1 matchExpressions NodeSelectorRequirement*; 2 matchFields NodeSelectorRequirement*",
    "NodeSpec": (
        "1 podCIDR s; 7 podCIDRs s*; 3 providerID s; 4 unschedulable b; 5 taints Taint*;"
        " 6 configSource NodeConfigSource; 2 externalID s"
    ),
    "NodeStatus": (
        "1 capacity {Quantity}; 2 allocatable {Quantity}; 3 phase s; 4 conditions NodeCondition*;"
        " 5 addresses NodeAddress*; 6 daemonEndpoints NodeDaemonEndpoints; 7 nodeInfo NodeSystemInfo;"
        " 8 images ContainerImage*; 9 volumesInUse s*; 10 volumesAttached AttachedVolume*;"
        " 11 config NodeConfigStatus; 12 runtimeHandlers NodeRuntimeHandler*; 13 features NodeFeatures;"
        " 14 declaredFeatures s*"
    ),
    "NodeSwapStatus": "1 capacity i?",
    "NodeSystemInfo": (
        "1 machineID s!; 2 systemUUID s!; 3 bootID s!; 4 kernelVersion s!; 5 osImage s!;"
        " 6 containerRuntimeVersion s!; 7 kubeletVersion s!; 8 kubeProxyVersion s!; 9 operatingSystem s!;"
        " 10 architecture s!; 11 swap NodeSwapStatus"
    ),
    "ObjectFieldSelector": "1 apiVersion s; 2 fieldPath s",
    "ObjectReference": (
        "1 kind s; 2 namespace s; 3 name s; 4 uid s; 5 apiVersion s; 6 resourceVersion s; 7 fieldPath s"
    ),
    "PersistentVolumeClaimSpec": (
        "1 accessModes s*; 4 selector LabelSelector; 2 resources VolumeResourceRequirements;"
        " 3 volumeName s; 5 storageClassName s?; 6 volumeMode s?; 7 dataSource TypedLocalObjectReference;"
        " 8 dataSourceRef TypedObjectReference; 9 volumeAttributesClassName s?"
    ),
    "PersistentVolumeClaimTemplate": "1 metadata ObjectMeta; 2 spec PersistentVolumeClaimSpec",
    "PersistentVolumeClaimVolumeSource": "1 claimName s; 2 readOnly b",
    "PhotonPersistentDiskVolumeSource": "1 pdID s; 2 fsType s",
    "Pod": "1 metadata ObjectMeta; 2 spec PodSpec; 3 status PodStatus",
    "PodAffinity": (
        "1 requiredDuringSchedulingIgnoredDuringExecution PodAffinityTerm*;"
        " 2 preferredDuringSchedulingIgnoredDuringExecution WeightedPodAffinityTerm*"
    ),
    "PodAffinityTerm": (
        "1 labelSelector LabelSelector; 2 namespaces s*; 3 topologyKey s;"
        " 4 namespaceSelector LabelSelector; 5 matchLabelKeys s*; 6 mismatchLabelKeys s*"
    ),
    "PodAntiAffinity": (
        "1 requiredDuringSchedulingIgnoredDuringExecution PodAffinityTerm*;"
        " 2 preferredDuringSchedulingIgnoredDuringExecution WeightedPodAffinityTerm*"
    ),
    "PodCertificateProjection": (
        "1 signerName s; 2 keyType s; 3 maxExpirationSeconds i?; 4 credentialBundlePath s; 5 keyPath s;"
        " 6 certificateChainPath s; 7 userAnnotations {s}"
    ),
    "PodCondition": (
        "1 type s!; 7 observedGeneration i; 2 status s!; 3 lastProbeTime Time;"
        " 4 lastTransitionTime Time; 5 reason s; 6 message s"
    ),
    "PodDNSConfig": "1 nameservers s*; 2 searches s*; 3 options PodDNSConfigOption*",
    "PodDNSConfigOption": "1 name s; 2 value s?",
    "PodExtendedResourceClaimStatus": (
        "1 requestMappings ContainerExtendedResourceRequest*; 2 resourceClaimName s"
    ),
    "ContainerExtendedResourceRequest": "1 containerName s; 2 resourceName s; 3 requestName s",
    "PodIP": "1 ip s!",
    "PodOS": "1 name s",
    "PodReadinessGate": "1 conditionType s",
    "PodResourceClaim": "1 name s; 3 resourceClaimName s?; 4 resourceClaimTemplateName s?",
    "PodResourceClaimStatus": "1 name s; 2 resourceClaimName s?",
    "PodSchedulingGate": "1 name s",
    "PodSecurityContext": (
        "1 seLinuxOptions SELinuxOptions; 8 windowsOptions WindowsSecurityContextOptions;"
        " 2 runAsUser i?; 6 runAsGroup i?; 3 runAsNonRoot b?; 4 supplementalGroups i*;"
        " 12 supplementalGroupsPolicy s?; 5 fsGroup i?; 7 sysctls Sysctl*; 9 fsGroupChangePolicy s?;"
        " 10 seccompProfile SeccompProfile; 11 appArmorProfile AppArmorProfile;"
        " 13 seLinuxChangePolicy s?"
    ),
    "PodSpec": (
        "1 volumes Volume*; 20 initContainers Container*; 2 containers Container*;"
        " 34 ephemeralContainers EphemeralContainer*; 3 restartPolicy s;"
        " 4 terminationGracePeriodSeconds i?; 5 activeDeadlineSeconds i?; 6 dnsPolicy s;"
        " 7 nodeSelector {s}; 8 serviceAccountName s; 9 serviceAccount s;"
        " 21 automountServiceAccountToken b?; 10 nodeName s; 11 hostNetwork b; 12 hostPID b;"
        " 13 hostIPC b; 27 shareProcessNamespace b?; 14 securityContext PodSecurityContext;"
        " 15 imagePullSecrets LocalObjectReference*; 16 hostname s; 17 subdomain s; 18 affinity Affinity;"
        " 19 schedulerName s; 22 tolerations Toleration*; 23 hostAliases HostAlias*;"
        " 24 priorityClassName s; 25 priority i?; 26 dnsConfig PodDNSConfig;"
        " 28 readinessGates PodReadinessGate*; 29 runtimeClassName s?; 30 enableServiceLinks b?;"
        " 31 preemptionPolicy s?; 32 overhead {Quantity};"
        " 33 topologySpreadConstraints TopologySpreadConstraint*; 35 setHostnameAsFQDN b?; 36 os PodOS;"
        " 37 hostUsers b?; 38 schedulingGates PodSchedulingGate*; 39 resourceClaims PodResourceClaim*;"
        " 40 resources ResourceRequirements; 41 hostnameOverride s?; 42 workloadRef WorkloadReference"
    ),
    "PodStatus": (
        "17 observedGeneration i; 1 phase s; 2 conditions PodCondition*; 3 message s; 4 reason s;"
        " 11 nominatedNodeName s; 5 hostIP s; 16 hostIPs HostIP*; 6 podIP s; 12 podIPs PodIP*;"
        " 7 startTime Time; 10 initContainerStatuses ContainerStatus*;"
        " 8 containerStatuses ContainerStatus*; 9 qosClass s;"
        " 13 ephemeralContainerStatuses ContainerStatus*; 14 resize s;"
        " 15 resourceClaimStatuses PodResourceClaimStatus*;"
        " 18 extendedResourceClaimStatus PodExtendedResourceClaimStatus;"
        " 19 allocatedResources {Quantity}; 20 resources ResourceRequirements"
    ),
    "PortStatus": "1 port i; 2 protocol s; 3 error s?",
    "PortworxVolumeSource": "1 volumeID s; 2 fsType s; 3 readOnly b",
    "PreferredSchedulingTerm": "1 weight i; 2 preference NodeSelectorTerm",
    "Probe": (
        "1 ^handler ProbeHandler; 2 initialDelaySeconds i; 3 timeoutSeconds i; 4 periodSeconds i;"
        " 5 successThreshold i; 6 failureThreshold i; 7 terminationGracePeriodSeconds i?"
    ),
    "ProbeHandler": (
        "1 exec ExecAction; 2 httpGet HTTPGetAction; 3 tcpSocket TCPSocketAction; 4 grpc GRPCAction"
    ),
    "ProjectedVolumeSource": "1 sources VolumeProjection*; 2 defaultMode i?",
    "QuobyteVolumeSource": "1 registry s; 2 volume s; 3 readOnly b; 4 user s; 5 group s; 6 tenant s",
    "RBDVolumeSource": (
        "1 monitors s*; 2 image s; 3 fsType s; 4 pool s; 5 user s; 6 keyring s;"
        " 7 secretRef LocalObjectReference; 8 readOnly b"
    ),
    "ResourceClaim": "1 name s; 2 request s",
    "ResourceFieldSelector": "1 containerName s; 2 resource s; 3 divisor Quantity",
    "ResourceHealth": "1 resourceID s; 2 health s; 6 message s?",
    "ResourceRequirements": "1 limits {Quantity}; 2 requests {Quantity}; 3 claims ResourceClaim*",
    "ResourceStatus": "1 name s; 2 resources ResourceHealth*",
    "SELinuxOptions": "1 user s; 2 role s; 3 type s; 4 level s",
    "ScaleIOVolumeSource": (
        "1 gateway s; 2 system s; 3 secretRef LocalObjectReference; 4 sslEnabled b;"
        " 5 protectionDomain s; 6 storagePool s; 7 storageMode s; 8 volumeName s; 9 fsType s;"
        " 10 readOnly b"
    ),
    "SeccompProfile": "1 type s; 2 localhostProfile s?",
    "Secret": "1 metadata ObjectMeta; 5 immutable b?; 2 data {B}; 4 stringData {s}; 3 type s",
    "SecretEnvSource": "1 ^localObjectReference LocalObjectReference; 2 optional b?",
    "SecretKeySelector": "1 ^localObjectReference LocalObjectReference; 2 key s; 3 optional b?",
    "SecretProjection": "1 ^localObjectReference LocalObjectReference; 2 items KeyToPath*; 4 optional b?",
    "SecretVolumeSource": "1 secretName s; 2 items KeyToPath*; 3 defaultMode i?; 4 optional b?",
    "SecurityContext": (
        "1 capabilities Capabilities; 2 privileged b?; 3 seLinuxOptions SELinuxOptions;"
        " 10 windowsOptions WindowsSecurityContextOptions; 4 runAsUser i?; 8 runAsGroup i?;"
        " 5 runAsNonRoot b?; 6 readOnlyRootFilesystem b?; 7 allowPrivilegeEscalation b?; 9 procMount s?;"
        " 11 seccompProfile SeccompProfile; 12 appArmorProfile AppArmorProfile; 13 ulimits Ulimit*"
    ),
    "Service": "1 metadata ObjectMeta; 2 spec ServiceSpec; 3 status ServiceStatus",
    "ServiceAccount": (
        "1 metadata ObjectMeta; 2 secrets ObjectReference*; 3 imagePullSecrets LocalObjectReference*;"
        " 4 automountServiceAccountToken b?"
    ),
    "ServiceAccountTokenProjection": "1 audience s; 2 expirationSeconds i?; 3 path s",
    "ServicePort": (
        "1 name s; 2 protocol s; 6 appProtocol s?; 3 port i!; 4 targetPort IntOrString; 5 nodePort i"
    ),
    "ServiceSpec": (
        "1 ports ServicePort*; 2 selector {s}; 3 clusterIP s; 18 clusterIPs s*; 4 type s;"
        " 5 externalIPs s*; 7 sessionAffinity s; 8 loadBalancerIP s; 9 loadBalancerSourceRanges s*;"
        " 10 externalName s; 11 externalTrafficPolicy s; 12 healthCheckNodePort i;"
        " 13 publishNotReadyAddresses b; 14 sessionAffinityConfig SessionAffinityConfig;"
        " 19 ipFamilies s*; 17 ipFamilyPolicy s?; 20 allocateLoadBalancerNodePorts b?;"
        " 21 loadBalancerClass s?; 22 internalTrafficPolicy s?; 23 trafficDistribution s?"
    ),
    "ServiceStatus": "1 loadBalancer LoadBalancerStatus; 2 conditions Condition*",
    "SessionAffinityConfig": "1 clientIP ClientIPConfig",
    "SleepAction": "1 seconds i",
    "StorageOSVolumeSource": (
        "1 volumeName s; 2 volumeNamespace s; 3 fsType s; 4 readOnly b; 5 secretRef LocalObjectReference"
    ),
    "Sysctl": "1 name s; 2 value s",
    "TCPSocketAction": "1 port IntOrString; 2 host s",
    "Taint": "1 key s!; 2 value s; 3 effect s!; 4 timeAdded Time",
    "Toleration": "1 key s; 2 operator s; 3 value s; 4 effect s; 5 tolerationSeconds i?",
    "TopologySpreadConstraint": (
        "1 maxSkew i; 2 topologyKey s; 3 whenUnsatisfiable s; 4 labelSelector LabelSelector;"
        " 5 minDomains i?; 6 nodeAffinityPolicy s?; 7 nodeTaintsPolicy s?; 8 matchLabelKeys s*"
    ),
    "TypedLocalObjectReference": "1 apiGroup s?; 2 kind s; 3 name s",
    "TypedObjectReference": "1 apiGroup s?; 2 kind s; 3 name s; 4 namespace s?",
    "Ulimit": "1 name s; 2 hard i; 3 soft i",
    "Volume": "1 name s!; 2 ^volumeSource VolumeSource",
    "VolumeDevice": "1 name s; 2 devicePath s",
    "VolumeMount": (
        "1 name s!; 2 readOnly b; 7 recursiveReadOnly s?; 3 mountPath s!; 4 subPath s;"
        " 5 mountPropagation s?; 6 subPathExpr s"
    ),
    "VolumeMountStatus": (
        "1 name s; 2 mountPath s; 3 readOnly b; 4 recursiveReadOnly s?; 5 volumeStatus VolumeStatus"
    ),
    "VolumeStatus": "1 image ImageVolumeStatus",
    "ImageVolumeStatus": "1 imageRef s",
    "VolumeProjection": (
        "1 secret SecretProjection; 2 downwardAPI DownwardAPIProjection;"
        " 3 configMap ConfigMapProjection; 4 serviceAccountToken ServiceAccountTokenProjection;"
        " 5 clusterTrustBundle ClusterTrustBundleProjection; 6 podCertificate PodCertificateProjection"
    ),
    "VolumeResourceRequirements": "1 limits {Quantity}; 2 requests {Quantity}",
    "VolumeSource": (
        "1 hostPath HostPathVolumeSource; 2 emptyDir EmptyDirVolumeSource;"
        " 3 gcePersistentDisk GCEPersistentDiskVolumeSource;"
        " 4 awsElasticBlockStore AWSElasticBlockStoreVolumeSource; 5 gitRepo GitRepoVolumeSource;"
        " 6 secret SecretVolumeSource; 7 nfs NFSVolumeSource; 8 iscsi ISCSIVolumeSource;"
        " 9 glusterfs GlusterfsVolumeSource; 10 persistentVolumeClaim PersistentVolumeClaimVolumeSource;"
        " 11 rbd RBDVolumeSource; 12 flexVolume FlexVolumeSource; 13 cinder CinderVolumeSource;"
        " 14 cephfs CephFSVolumeSource; 15 flocker FlockerVolumeSource;"
        " 16 downwardAPI DownwardAPIVolumeSource; 17 fc FCVolumeSource;"
        " 18 azureFile AzureFileVolumeSource; 19 configMap ConfigMapVolumeSource;"
        " 20 vsphereVolume VsphereVirtualDiskVolumeSource; 21 quobyte QuobyteVolumeSource;"
        " 22 azureDisk AzureDiskVolumeSource; 23 photonPersistentDisk PhotonPersistentDiskVolumeSource;"
        " 26 projected ProjectedVolumeSource; 24 portworxVolume PortworxVolumeSource;"
        " 25 scaleIO ScaleIOVolumeSource; 27 storageos StorageOSVolumeSource; 28 csi CSIVolumeSource;"
        " 29 ephemeral EphemeralVolumeSource; 30 image ImageVolumeSource"
    ),
    "VsphereVirtualDiskVolumeSource": (
        "1 volumePath s; 2 fsType s; 3 storagePolicyName s; 4 storagePolicyID s"
    ),
    "WeightedPodAffinityTerm": "1 weight i; 2 podAffinityTerm PodAffinityTerm",
    "WindowsSecurityContextOptions": (
        "1 gmsaCredentialSpecName s?; 2 gmsaCredentialSpec s?; 3 runAsUserName s?; 4 hostProcess b?"
    ),
    "WorkloadReference": "1 name s; 2 podGroup s; 3 podGroupReplicaKey s?",
}

# EphemeralContainerCommon is a copy of Container's fields under the same numbers.
TABLES["EphemeralContainerCommon"] = TABLES["Container"]
